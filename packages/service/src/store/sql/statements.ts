import type { AuditQuery, ListFilter, RecordRemoval } from '../types.js';
import { ENTITY_COLUMNS, ENTITY_UPSERT, FEED_COLUMNS, names, RECORD_COLUMNS, RECORD_UPSERT } from './columns.js';
import { type Dialect, numberedPlaceholders } from './dialect.js';
import { NamedStatement } from './named-statement.js';
import { type TrimParams, trimStatements } from './trim-statements.js';

// Every statement both backends run, written once; a difference between the databases comes in as a
// named fragment of the dialect (dialect.ts). `statementsFor` gives a backend's final text (placeholders
// numbered for PostgreSQL), built once when the backend module loads, so each text is one prepared
// statement per connection (better-sqlite3 statements on SQLite, named statements on PostgreSQL).
// A statement with a few values in their natural order takes `?`s and an array in that order; one with
// many values, or one value in several places, names them (`:team`) and takes an object
// (named-statement.ts).

const RECORD = 'SELECT seq, kind, id, team, version, json, removed FROM records';
const FILTERS = ['board', 'stage', 'status', 'lead'] as const;
/**
 * The body a feed entry `f` delivers: its own, or, when it has none and is no removal, its record's current
 * JSON (the entry of a record's current version borrows the row's; docs/feed.md, "What is stored").
 */
const ENTRY_BODY = `CASE WHEN f.body IS NOT NULL THEN f.body
  WHEN f.removed IS NULL THEN (SELECT r.json FROM records r WHERE r.kind = f.kind AND r.id = f.id) END`;

const ENTITY = `SELECT ${names(ENTITY_COLUMNS)} FROM entities`;

const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** Which of `findEntities`' conditions a query has: `team`, `parent`, both or neither. */
export type EntityLookup = 'kind' | 'team' | 'parent' | 'both';
export const entityLookup = (by: { team?: string; parent?: string }): EntityLookup =>
  by.team !== undefined ? (by.parent !== undefined ? 'both' : 'team') : by.parent !== undefined ? 'parent' : 'kind';
/** Values of a `findEntities` statement. */
export const entityLookupValues = (kind: string, by: { team?: string; parent?: string }): unknown[] => [
  kind,
  ...(by.team !== undefined ? [by.team] : []),
  ...(by.parent !== undefined ? [by.parent] : []),
];

type PageVariant = 'none' | ListFilter['by'];

/** What a list page binds (`listPage`, `listRecords`); `value` is the filter's, for a filtered variant. */
export interface PageParams {
  team: string;
  kind: string;
  value?: string;
  /** Keyset: rows after this position. */
  after: number;
  limit: number;
}

/** What `searchLeads` binds: each criterion is its own lookup (null matches nothing). */
export interface SearchParams {
  team: string;
  email: string | null;
  phone: string | null;
  after: number;
  limit: number;
}

/** What `feedPage` binds: `fetch` entries are read (one more than a page), `limit` of them are served. */
export interface FeedPageParams {
  team: string;
  after: number;
  fetch: number;
  /** Epoch ms: entries recorded later are not ready. */
  cutoff: number;
  limit: number;
}

/** The statement texts of one backend. */
export function statementsFor(d: Dialect) {
  const text = d.backend === 'postgres' ? numberedPlaceholders : (s: string) => s;
  const named = <P extends object>(s: string) => new NamedStatement<P>(s, d.backend);
  const variants = <K extends string>(keys: readonly K[], make: (key: K) => string) =>
    Object.fromEntries(keys.map((key) => [key, text(make(key))])) as Record<K, string>;
  const namedVariants = <K extends string, P extends object>(keys: readonly K[], make: (key: K) => string) =>
    Object.fromEntries(keys.map((key) => [key, named<P>(make(key))])) as Record<K, NamedStatement<P>>;
  const entityWhere: Record<EntityLookup, string> = {
    kind: 'kind = ?',
    team: 'kind = ? AND team = ?',
    parent: 'kind = ? AND parent = ?',
    both: 'kind = ? AND team = ? AND parent = ?',
  };
  const lookups = Object.keys(entityWhere) as EntityLookup[];
  const filter = (by: PageVariant) => (by === 'none' ? '' : `AND ${by} = :value`);
  // A lead, board or stage index holds no team (migration 0009): the team is checked on the rows read.
  const teamOf = (by: PageVariant) => (by === 'lead' || by === 'board' || by === 'stage' ? `${d.noIndex}team` : 'team');
  const pages: PageVariant[] = ['none', ...FILTERS];

  /**
   * One keyset page in one statement: the page's bodies joined by the database into one value, its size,
   * its last position and id, and whether a live row follows it.
   */
  const listPage = (by: PageVariant, joined: string) => {
    const where = `${teamOf(by)} = :team AND kind = :kind ${filter(by)} AND removed IS NULL`;
    return `SELECT p.items, p.joined_order, p.n, p.last_seq, p.last_id,
      p.n = :limit AND EXISTS (SELECT 1 FROM records WHERE ${where} AND seq > p.last_seq) AS more
    FROM (SELECT ${joined} AS items, ${d.joinedOrder} AS joined_order, ${d.pageCount} AS n, max(seq) AS last_seq, ${d.lastId} AS last_id
      FROM (SELECT seq, id, json FROM records WHERE ${where} AND seq > :after
        ORDER BY seq ${d.limit}:limit)${d.pageAlias}) p`;
  };

  /**
   * One page of a team's feed in one statement: up to `limit + 1` entries after a position, cut before the
   * first one recorded after the hold-back's cutoff; the first `limit` of the rest are rendered as feed
   * items (docs/feed.md) and joined by the database, and the count of the rest tells whether more follow.
   * An entry without a body of its own is its record's current version and takes the row's JSON, looked up
   * for the page's entries only. Ids and kinds are plain ASCII by their patterns, so they need no escaping.
   * The team's head comes from the same snapshot (what a page read ahead is checked by, feed-read-ahead.ts).
   */
  const feedPage = (joined: string) => `WITH fetched AS (
      SELECT pos, kind, id, version, recorded_at, removed, body FROM feed WHERE team = :team AND pos > :after
        ORDER BY pos ${d.limit}:fetch),
    ready AS (SELECT * FROM fetched
      WHERE pos < coalesce((SELECT min(pos) FROM fetched WHERE recorded_at > :cutoff), ${Number.MAX_SAFE_INTEGER})),
    page AS (SELECT * FROM ready ORDER BY pos ${d.limit}:limit)
    SELECT p.items, p.joined_order, p.n, p.last_seq AS last_pos, p.last_recorded_at, (SELECT count(*) FROM ready) AS ready,
      (SELECT last_pos FROM feed_heads WHERE team = :team) AS head
    FROM (SELECT ${joined} AS items, ${d.joinedOrder} AS joined_order, ${d.pageCount} AS n, max(seq) AS last_seq,
        ${d.lastRecordedAt} AS last_recorded_at
      FROM (SELECT pos AS seq, recorded_at,
          '{"kind":"' || kind || '","id":"' || id || '","version":' || version || ',' || CASE
            WHEN removed IS NULL AND body IS NOT NULL THEN '"object":' || body || '}'
            ELSE '"removed":{"reason":"' || coalesce(removed, 'deleted') || '"}}' END AS json
        FROM (SELECT pos, kind, id, version, recorded_at, removed, ${ENTRY_BODY} AS body FROM page f) e
        ORDER BY pos) i) p`;

  return {
    entity: text(`${ENTITY} WHERE kind = ? AND id = ?`),
    entityLocked: text(`${ENTITY} WHERE kind = ? AND id = ?${d.forUpdate}`),
    entities: variants(lookups, (by) => `${ENTITY} WHERE ${entityWhere[by]} ORDER BY ord`),
    entitiesLocked: variants(lookups, (by) => `${ENTITY} WHERE ${entityWhere[by]} ORDER BY ord${d.forUpdate}`),
    putEntity: text(
      `INSERT INTO entities (${names(ENTITY_COLUMNS)}) VALUES (${marks(ENTITY_COLUMNS.length)}) ${ENTITY_UPSERT}`,
    ),
    deleteEntity: text('DELETE FROM entities WHERE kind = ? AND id = ?'),

    record: text(`${RECORD} WHERE kind = ? AND id = ?`),
    recordLocked: text(`${RECORD} WHERE kind = ? AND id = ?${d.forUpdate}`),
    /** Live records of a kind among ids passed as one JSON array. */
    liveRecords: text(`${RECORD} WHERE kind = ? AND id IN (${d.jsonArrayItems}) AND removed IS NULL`),
    putRecord: text(
      `INSERT INTO records (seq, ${names(RECORD_COLUMNS)}, removed) VALUES (${d.newRecordSeq}, ${marks(RECORD_COLUMNS.length)}, NULL)
       ${RECORD_UPSERT}`,
    ),
    /** Before a record row is replaced: the entry of its version borrows its JSON and gets its own copy. */
    keepSupersededBody: named<{ kind: string; id: string }>(
      `UPDATE feed SET body = (SELECT json FROM records WHERE kind = :kind AND id = :id)
       WHERE kind = :kind AND id = :id AND body IS NULL AND removed IS NULL`,
    ),
    removeRecord: named<RecordRemoval>(
      `UPDATE records SET removed = :reason, version = :version, updated_at = :at,
         json = NULL, email = NULL, phone = NULL
       WHERE kind = :kind AND id = :id`,
    ),
    listRecords: namedVariants<PageVariant, PageParams>(
      pages,
      (by) =>
        `SELECT seq, json FROM records WHERE ${teamOf(by)} = :team AND kind = :kind ${filter(by)} AND removed IS NULL
         AND seq > :after ORDER BY seq ${d.limit}:limit`,
    ),
    listPage: namedVariants<PageVariant, PageParams>(pages, (by) => listPage(by, d.joinedJson)),
    /** The same page with its bodies sorted inside the aggregate (see `joinedJson` in dialect.ts). */
    listPageSorted: namedVariants<PageVariant, PageParams>(pages, (by) => listPage(by, d.joinedJsonSorted)),
    /**
     * The lead's JSON, its two facets' JSON and its team, from one statement; rows.ts splices the facets in.
     * Not spliced by SQLite's `||`: each step there copies the growing text again.
     */
    leadDetail: text(`SELECT l.team AS team, l.json AS lead, a.json AS attribution, r.json AS response
    FROM records l
    LEFT JOIN records a ON a.kind = 'lead_attribution' AND a.id = l.id
    LEFT JOIN records r ON r.kind = 'lead_response' AND r.id = l.id
    WHERE l.kind = 'lead' AND l.id = ? AND l.removed IS NULL AND l.json IS NOT NULL`),
    /**
     * Live leads of a team whose email or phone is the one asked, after a position. Each criterion is its own
     * lookup in its index (records_email, records_phone), merged by position: written as one condition with
     * OR, SQLite walked every lead of the team in position order to keep the ORDER BY free of a sort. The
     * rows are then read by their key (team, kind, seq): by `seq` alone, a walk of the whole table.
     */
    searchLeads: named<SearchParams>(`SELECT seq, json FROM records WHERE team = :team AND kind = 'lead' AND seq IN (
        SELECT seq FROM records WHERE team = :team AND kind = 'lead' AND removed IS NULL AND email = :email
          AND seq > :after
        UNION SELECT seq FROM records WHERE team = :team AND kind = 'lead' AND removed IS NULL AND phone = :phone
          AND seq > :after)
      ORDER BY seq ${d.limit}:limit`),
    erasedRecords: text(
      `SELECT kind, id, team, updated_at FROM records WHERE removed = 'erased' ORDER BY updated_at, kind, id`,
    ),

    /**
     * A page of a team's feed. An entry without a body of its own is its record's current version: the body
     * is the row's JSON. The page is cut first and each entry then looks up its record: as a join, a planner
     * without statistics joined the team's whole feed before the limit (17 pages/s on 40,000 entries).
     */
    readFeed: text(`SELECT f.team AS team, f.pos AS pos, f.kind AS kind, f.id AS id, f.version AS version,
        f.recorded_at AS recorded_at, f.removed AS removed, ${ENTRY_BODY} AS body
      FROM (SELECT * FROM feed WHERE team = ? AND pos > ? ORDER BY pos ${d.limit}?) f
      ORDER BY f.pos`),
    feedPage: named<FeedPageParams>(feedPage(d.joinedJson)),
    /** The same page with its items sorted inside the aggregate (see `joinedJson` in dialect.ts). */
    feedPageSorted: named<FeedPageParams>(feedPage(d.joinedJsonSorted)),
    feedHead: text('SELECT last_pos FROM feed_heads WHERE team = ?'),
    feedHeadTimes: text(
      'SELECT h.team AS team, f.recorded_at AS recorded_at FROM feed_heads h JOIN feed f ON f.team = h.team AND f.pos = h.last_pos',
    ),
    insertFeed: text(`INSERT INTO feed (${names(FEED_COLUMNS)}) VALUES (${marks(FEED_COLUMNS.length)})`),
    /** Moves a team's head one on (creating it at 1) and returns it. */
    nextFeedPos: text(`INSERT INTO feed_heads AS h (team, last_pos) VALUES (?, 1)
      ON CONFLICT (team) DO UPDATE SET last_pos = h.last_pos + 1 RETURNING last_pos`),
    /** Moves a team's head to a position unless it is past it already (creating it there). */
    raiseFeedHead: text(`INSERT INTO feed_heads AS h (team, last_pos) VALUES (?, ?)
      ON CONFLICT (team) DO UPDATE SET last_pos = ${d.larger}(h.last_pos, excluded.last_pos)`),
    purgeFeed: text('DELETE FROM feed WHERE kind = ? AND id = ?'),
    ...trimStatements(d, (text) => named<TrimParams>(text)),

    meta: text('SELECT value FROM meta WHERE key = ?'),
    metaLocked: text(`SELECT value FROM meta WHERE key = ?${d.forUpdate}`),
    putMeta: text('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
    appendAudit: text('INSERT INTO audit (at, actor, action, target, outcome, details) VALUES (?, ?, ?, ?, ?, ?)'),
    listAudit: (query: AuditQuery) => {
      const { text: where, values } = auditWhere(d, query);
      return {
        text: text(`SELECT at, actor, action, target, outcome, details FROM audit
          ${where} ORDER BY seq DESC ${d.limit}?`),
        values: [...values, query.limit],
      };
    },
    ping: text('SELECT 1'),
    migrationTable: text(d.migrationTable),
    appliedMigrations: text('SELECT name FROM kysely_migration'),
  };
}

function auditWhere(d: Dialect, query: AuditQuery): { text: string; values: unknown[] } {
  const where: string[] = [];
  const values: unknown[] = [];
  const when = (condition: string, ...bound: unknown[]) => {
    where.push(condition);
    values.push(...bound);
  };
  if (query.since !== undefined) when('at >= ?', query.since);
  if (query.until !== undefined) when('at < ?', query.until);
  const { action, target } = query;
  if (action !== undefined) when("(action = ? OR substr(action, 1, length(?) + 1) = ? || '.')", action, action, action);
  if (query.actor !== undefined) when('actor = ?', query.actor);
  if (target !== undefined) when(`${d.position}(',' || target || ',', ',' || ? || ',') > 0`, target);
  return { text: where.length ? `WHERE ${where.join(' AND ')}` : '', values };
}

export type Statements = ReturnType<typeof statementsFor>;
