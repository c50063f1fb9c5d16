import type { Kysely, Migration, sql as SqlTag } from 'kysely';
import { type Backend, type Dialect, POSTGRES, SQLITE } from './dialect.js';

// The versioned schema of both backends, applied in order by Kysely's migrator on every start. One file,
// over 300 lines on purpose: it is the schema's history, read top to bottom, and each step is short and
// never changes. Names are what each database records as applied: never renumber or rename one. Types come
// from the dialect (dialect.ts); everything else is the same text on both, but for a step that says why it
// cannot be (0011). On PostgreSQL names are unqualified (the store sets `search_path` to its schema) and
// stored JSON (`state`, `json`, `body`) stays `text`: the API sends it as stored, and `jsonb` would
// re-serialize it (key order, spacing) on every read.

type Up = (db: Kysely<unknown>, d: Dialect) => Promise<void>;

/**
 * Kysely's `sql` tag, loaded with the migrator when a migration runs (`migrationsFor`): a start with nothing
 * to apply does not load Kysely at all (store/sqlite/sqlite-migrator.ts).
 */
let sql: typeof SqlTag;

const v1: Up = async (db, d) => {
  const t = (name: 'serialKey' | 'text' | 'integer' | 'bigint') => sql.raw(d[name]);
  await sql`CREATE TABLE entities (
      ord ${t('serialKey')},
      kind ${t('text')} NOT NULL,
      id ${t('text')} NOT NULL,
      team ${t('text')},
      parent ${t('text')},
      state ${t('text')} NOT NULL,
      UNIQUE (kind, id)
    )`.execute(db);
  await sql`CREATE INDEX entities_team ON entities (kind, team, ord)`.execute(db);
  await sql`CREATE INDEX entities_parent ON entities (kind, parent, ord)`.execute(db);

  await sql`CREATE TABLE records (
      seq ${t('serialKey')},
      kind ${t('text')} NOT NULL,
      id ${t('text')} NOT NULL,
      team ${t('text')} NOT NULL,
      lead ${t('text')},
      board ${t('text')},
      stage ${t('text')},
      status ${t('text')},
      email ${t('text')},
      phone ${t('text')},
      version ${t('integer')} NOT NULL,
      updated_at ${t('text')} NOT NULL,
      json ${t('text')},
      removed ${t('text')},
      UNIQUE (kind, id)
    )`.execute(db);
  // Partial indexes over live rows only: every list is a keyset walk over one of these.
  await sql`CREATE INDEX records_team ON records (team, kind, seq) WHERE removed IS NULL`.execute(db);
  for (const column of ['board', 'stage', 'status', 'lead']) {
    await sql`CREATE INDEX ${sql.raw(`records_${column}`)} ON records (team, kind, ${sql.raw(column)}, seq) WHERE removed IS NULL`.execute(
      db,
    );
  }
  for (const column of ['email', 'phone']) {
    await sql`CREATE INDEX ${sql.raw(`records_${column}`)} ON records (team, ${sql.raw(column)}) WHERE removed IS NULL AND ${sql.raw(column)} IS NOT NULL`.execute(
      db,
    );
  }

  await sql`CREATE TABLE feed (
      team ${t('text')} NOT NULL,
      pos ${t('bigint')} NOT NULL,
      kind ${t('text')} NOT NULL,
      id ${t('text')} NOT NULL,
      version ${t('integer')} NOT NULL,
      recorded_at ${t('bigint')} NOT NULL,
      body ${t('text')},
      removed ${t('text')},
      PRIMARY KEY (team, pos)
    )`.execute(db);
  await sql`CREATE INDEX feed_record ON feed (kind, id, pos)`.execute(db);
  await sql`CREATE INDEX feed_recorded ON feed (recorded_at)`.execute(db);
  // One row per team: on PostgreSQL its row lock is what orders a team's feed by commit (docs/feed-order.md).
  await sql`CREATE TABLE feed_heads (team ${t('text')} PRIMARY KEY, last_pos ${t('bigint')} NOT NULL)`.execute(db);
  await sql`CREATE TABLE meta (key ${t('text')} PRIMARY KEY, value ${t('text')} NOT NULL)`.execute(db);
};

// Retention deletes expired removals in batches, oldest first: this index finds them without walking the
// live entries (most of the feed) that feed_recorded would pass over on every batch. Small (removals only).
const v2: Up = async (db) => {
  await sql`CREATE INDEX feed_removals ON feed (recorded_at) WHERE removed IS NOT NULL`.execute(db);
};

// The operators' audit trail (`crm-export admin audit list`): ids and settings only, never a key or personal
// data. `target` holds the ids comma separated; `details` is JSON. Never trimmed by the service.
const v3: Up = async (db, d) => {
  const text = sql.raw(d.text);
  await sql`CREATE TABLE audit (
      seq ${sql.raw(d.serialKey)},
      at ${text} NOT NULL,
      actor ${text} NOT NULL,
      action ${text} NOT NULL,
      target ${text} NOT NULL,
      outcome ${text} NOT NULL,
      details ${text} NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX audit_at ON audit (at)`.execute(db);
};

// Compact storage (docs/feed.md, "What is stored"). A feed entry of its record's current version stores no
// body of its own: reads take the record row's JSON, and an entry gets its own copy only when its record
// moves on to a newer version. Existing entries that duplicate their record's row drop their copy here.
// Index entries only for rows a filter can match: the board, stage, status and lead indexes skip rows
// whose column is null (a lead has no lead column, a call no board), and feed_recorded, which no query
// reads since retention has its own indexes, goes.
const v4: Up = async (db) => {
  await sql`UPDATE feed SET body = NULL WHERE removed IS NULL AND body IS NOT NULL AND EXISTS (
      SELECT 1 FROM records r WHERE r.kind = feed.kind AND r.id = feed.id AND r.version = feed.version
      AND r.json = feed.body)`.execute(db);
  await sql`DROP INDEX feed_recorded`.execute(db);
  for (const column of ['board', 'stage', 'status', 'lead']) {
    await sql`DROP INDEX ${sql.raw(`records_${column}`)}`.execute(db);
    await sql`CREATE INDEX ${sql.raw(`records_${column}`)} ON records (team, kind, ${sql.raw(column)}, seq)
        WHERE removed IS NULL AND ${sql.raw(column)} IS NOT NULL`.execute(db);
  }
};

// A lead's activities are found from its activity counter (their ids derive from it), so the entity each
// activity had only to be listed under its lead goes: half the entity rows of a demo and their index entries.
const v5: Up = async (db) => {
  await sql`DELETE FROM entities WHERE kind = 'activity'`.execute(db);
};

// Continuous intake (docs/ingest.md, docs/intake.md): each producer's position and counters, kept for ever;
// the ids of the events applied lately with their content's digest (retention trims them by age, never
// sooner than the dedupe window); and the quarantine of events the write side refused, with the events
// waiting behind them in their lane. Events are stored without their content fields.
const v6: Up = async (db, d) => {
  const t = (name: 'text' | 'integer' | 'bigint') => sql.raw(d[name]);
  await sql`CREATE TABLE intake_sources (
      source ${t('text')} PRIMARY KEY,
      last_seq ${t('bigint')} NOT NULL,
      last_event_at ${t('bigint')},
      applied ${t('bigint')} NOT NULL,
      duplicates ${t('bigint')} NOT NULL,
      rejected ${t('bigint')} NOT NULL,
      quarantined ${t('bigint')} NOT NULL,
      updated_at ${t('bigint')} NOT NULL
    )`.execute(db);
  await sql`CREATE TABLE intake_ids (
      source ${t('text')} NOT NULL,
      id ${t('text')} NOT NULL,
      digest ${t('text')} NOT NULL,
      seq ${t('bigint')},
      applied_at ${t('bigint')} NOT NULL,
      PRIMARY KEY (source, id)
    )`.execute(db);
  await sql`CREATE INDEX intake_ids_applied ON intake_ids (applied_at)`.execute(db);
  await sql`CREATE TABLE intake_quarantine (
      source ${t('text')} NOT NULL,
      seq ${t('bigint')} NOT NULL,
      id ${t('text')},
      lane ${t('text')} NOT NULL,
      type ${t('text')} NOT NULL,
      event ${t('text')} NOT NULL,
      code ${t('text')} NOT NULL,
      field ${t('text')},
      message ${t('text')} NOT NULL,
      attempts ${t('integer')} NOT NULL,
      first_at ${t('bigint')} NOT NULL,
      last_at ${t('bigint')} NOT NULL,
      PRIMARY KEY (source, seq)
    )`.execute(db);
  await sql`CREATE INDEX intake_quarantine_lane ON intake_quarantine (lane, source, seq)`.execute(db);
};

// The request log, usage counts and last uses (docs/request-log.md): written in batches by each API
// process, trimmed by retention. `request_log` is read newest first per integration; `usage_counts` adds up
// every process's requests and items per integration, hour, route and reason ('' for a success);
// `last_use` keeps the newest use of each key, integration and operator token.
const v8: Up = async (db, d) => {
  const t = (name: 'serialKey' | 'text' | 'integer' | 'bigint') => sql.raw(d[name]);
  await sql`CREATE TABLE request_log (
      seq ${t('serialKey')},
      at ${t('bigint')} NOT NULL,
      integration ${t('text')} NOT NULL,
      request_id ${t('text')} NOT NULL,
      method ${t('text')} NOT NULL,
      route ${t('text')} NOT NULL,
      status ${t('integer')} NOT NULL,
      code ${t('text')},
      items ${t('integer')} NOT NULL,
      address ${t('text')} NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX request_log_integration ON request_log (integration, seq)`.execute(db);
  await sql`CREATE INDEX request_log_at ON request_log (at)`.execute(db);
  await sql`CREATE TABLE usage_counts (
      integration ${t('text')} NOT NULL,
      hour ${t('bigint')} NOT NULL,
      route ${t('text')} NOT NULL,
      reason ${t('text')} NOT NULL,
      requests ${t('bigint')} NOT NULL,
      items ${t('bigint')} NOT NULL,
      last_at ${t('bigint')} NOT NULL,
      PRIMARY KEY (integration, hour, route, reason)
    )`.execute(db);
  await sql`CREATE INDEX usage_counts_hour ON usage_counts (hour)`.execute(db);
  await sql`CREATE TABLE last_use (
      kind ${t('text')} NOT NULL,
      id ${t('text')} NOT NULL,
      at ${t('bigint')} NOT NULL,
      address ${t('text')} NOT NULL,
      PRIMARY KEY (kind, id)
    )`.execute(db);
};

// The management API's idempotency keys (docs/management.md, "Idempotency"): per caller (an operator token's
// name) and key digest, the request's digest and, once it finished, its sealed answer. Kept 24 hours.
const v7: Up = async (db, d) => {
  const t = (name: 'text' | 'integer' | 'bigint') => sql.raw(d[name]);
  await sql`CREATE TABLE idempotency_keys (
      owner ${t('text')} NOT NULL,
      key ${t('text')} NOT NULL,
      digest ${t('text')} NOT NULL,
      state ${t('text')} NOT NULL,
      status ${t('integer')},
      answer ${t('text')},
      created_at ${t('bigint')} NOT NULL,
      PRIMARY KEY (owner, key)
    )`.execute(db);
  await sql`CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)`.execute(db);
};

// The lead, board and stage indexes without the team, a third of their bytes: such an id belongs to one
// team, so an index lookup by it finds that team's rows, and the list statements check `team = ?` on the
// rows they read anyway. The status index keeps the team: every team shares the status values.
const v9: Up = async (db) => {
  for (const column of ['lead', 'board', 'stage']) {
    await sql`DROP INDEX ${sql.raw(`records_${column}`)}`.execute(db);
    await sql`CREATE INDEX ${sql.raw(`records_${column}`)} ON records (kind, ${sql.raw(column)}, seq)
        WHERE removed IS NULL AND ${sql.raw(column)} IS NOT NULL`.execute(db);
  }
};

// The parent index holds only entities that have a parent: every lookup by parent names one. (feed_record
// keeps the kind: by id alone, on a PostgreSQL table without statistics yet, the retention of superseded
// entries ANDed the team's whole range of the primary key to each lookup and ran 10 times slower.)
const v10: Up = async (db) => {
  await sql`DROP INDEX entities_parent`.execute(db);
  await sql`CREATE INDEX entities_parent ON entities (kind, parent, ord) WHERE parent IS NOT NULL`.execute(db);
};

// Pages in one range (docs/performance.md, "Uncached list page"). On SQLite the records are stored in list
// order: keyed by (team, kind, seq) in a table without rowid, a page of 100 is one walk over neighbouring
// leaf pages instead of 100 reads spread over a file where each lead lies among its activities. Its
// (team, kind, seq) index goes: the key is that index. `seq` is no longer numbered by the table: a counter
// in `meta` gives each new record the next one (`newRecordSeq` in dialect.ts; a trigger moves it on insert),
// so a number is never given twice. `removed` is stored before the JSON: a list skips removed rows without
// reading a large record's overflow pages. PostgreSQL's heap keeps no order: there the key becomes
// (team, kind, seq) in place of `seq` alone, the same index as the list's. With both, the planner walked the
// key by `seq` for a page's order, through every kind of the table, three times slower.
const v11: Up = async (db, d) => {
  if (d.backend === 'postgres') {
    await sql`ALTER TABLE records DROP CONSTRAINT records_pkey`.execute(db);
    await sql`ALTER TABLE records ADD PRIMARY KEY (team, kind, seq)`.execute(db);
    await sql`DROP INDEX records_team`.execute(db);
    return;
  }
  await sql`CREATE TABLE records_by_list (
      team TEXT NOT NULL,
      kind TEXT NOT NULL,
      seq INTEGER NOT NULL,
      id TEXT NOT NULL,
      version INTEGER NOT NULL,
      removed TEXT,
      lead TEXT,
      board TEXT,
      stage TEXT,
      status TEXT,
      email TEXT,
      phone TEXT,
      updated_at TEXT NOT NULL,
      json TEXT,
      PRIMARY KEY (team, kind, seq),
      UNIQUE (kind, id)
    ) WITHOUT ROWID`.execute(db);
  const columns = sql.raw(
    'team, kind, seq, id, version, removed, lead, board, stage, status, email, phone, updated_at, json',
  );
  await sql`INSERT INTO records_by_list (${columns}) SELECT ${columns} FROM records ORDER BY team, kind, seq`.execute(
    db,
  );
  await sql`INSERT INTO meta (key, value) SELECT 'last_record_seq', coalesce(max(seq), 0) FROM records`.execute(db);
  await sql`DROP TABLE records`.execute(db);
  await sql`ALTER TABLE records_by_list RENAME TO records`.execute(db);
  await sql`CREATE TRIGGER records_seq AFTER INSERT ON records
    BEGIN UPDATE meta SET value = max(CAST(value AS INTEGER), NEW.seq) WHERE key = 'last_record_seq'; END`.execute(db);
  for (const column of ['lead', 'board', 'stage']) {
    await sql`CREATE INDEX ${sql.raw(`records_${column}`)} ON records (kind, ${sql.raw(column)}, seq)
        WHERE removed IS NULL AND ${sql.raw(column)} IS NOT NULL`.execute(db);
  }
  await sql`CREATE INDEX records_status ON records (team, kind, status, seq)
      WHERE removed IS NULL AND status IS NOT NULL`.execute(db);
  for (const column of ['email', 'phone']) {
    await sql`CREATE INDEX ${sql.raw(`records_${column}`)} ON records (team, ${sql.raw(column)})
        WHERE removed IS NULL AND ${sql.raw(column)} IS NOT NULL`.execute(db);
  }
};

const STEPS: Record<string, Up> = {
  '0001_initial': v1,
  '0002_feed_removals': v2,
  '0003_audit': v3,
  '0004_compact_storage': v4,
  '0005_activities_without_entities': v5,
  '0006_intake': v6,
  '0007_management': v7,
  '0008_request_log': v8,
  '0009_filter_indexes_without_team': v9,
  '0010_parent_index_without_orphans': v10,
  '0011_records_in_list_order': v11,
};

/** The migrations of one backend, by the names databases record them under. */
export function migrationsFor(d: Dialect): Record<string, Migration> {
  return Object.fromEntries(
    Object.entries(STEPS).map(([name, up]) => [
      name,
      {
        up: async (db: Kysely<unknown>) => {
          sql = (await import('kysely')).sql;
          await up(db, d);
        },
      } satisfies Migration,
    ]),
  );
}

/** Each backend's migrations. */
export const MIGRATIONS: Record<Backend, Record<string, Migration>> = {
  sqlite: migrationsFor(SQLITE),
  postgres: migrationsFor(POSTGRES),
};

/** Names of `migrations` not among the applied ones (rows of the migrator's table). */
export function pendingOf(
  migrations: Record<string, Migration>,
  applied: readonly Record<string, unknown>[],
): string[] {
  const names = new Set(applied.map((row) => row.name));
  return Object.keys(migrations).filter((name) => !names.has(name));
}
