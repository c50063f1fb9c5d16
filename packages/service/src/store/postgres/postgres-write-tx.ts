import { CompiledQuery, type Kysely, type RawBuilder, sql } from 'kysely';
import type { FeedKind, RecordKind, RemovalReason } from '../../schemas/enums.js';
import { borrowBodies } from '../sql/borrow-bodies.js';
import { POSTGRES } from '../sql/dialect.js';
import { asNumber, type Row, toEntity, toStored } from '../sql/rows.js';
import {
  type Column,
  ENTITY_COLUMNS,
  ENTITY_UPSERT,
  entityLookup,
  entityLookupValues,
  FEED_COLUMNS,
  names,
  RECORD_COLUMNS,
  RECORD_UPSERT,
  statementsFor,
} from '../sql/statements.js';
import type { WriteTx } from '../store.js';
import type { Entity, EntityKind, FeedEntry, RecordRow, StoredRecord, WriteSet } from '../types.js';

export type Db = Kysely<unknown>;

const SQL = statementsFor(POSTGRES);

/** Namespaces of the advisory locks that guard keys a transaction read as absent. */
const LOCK_SPACES = ['entity', 'record', 'meta'] as const;
type LockSpace = (typeof LOCK_SPACES)[number];

/** Another transaction holds what this one needs: roll back and run again (SQLSTATE 40001). */
export class WriteConflict extends Error {
  readonly code = '40001';
  constructor() {
    super('write conflict: another transaction is creating the same row');
  }
}

/** One field of every row, as the array a `unnest` parameter takes (undefined becomes null). */
function col<T, K extends keyof T>(list: readonly T[], key: K): T[K][] {
  return list.map((item) => item[key] ?? (null as T[K]));
}

async function rows(db: Db, query: RawBuilder<unknown>): Promise<Row[]> {
  return (await query.execute(db)).rows as Row[];
}

/** Runs one of the shared statements (statements.ts) in the transaction. */
async function run(db: Db, text: string, values: unknown[]): Promise<Row[]> {
  return (await db.executeQuery<Row>(CompiledQuery.raw(text, values))).rows;
}

/**
 * Multi-row writes: the rows passed as one JSON array of row objects (one parameter, serialized by
 * JSON.stringify) and read back as typed columns by `json_to_recordset`, so the statement text and its
 * plan stay the same whatever the number of rows (PostgreSQL's way; SQLite runs a prepared statement per
 * row). Cheaper than a typed array per column, whose literal the driver builds by escaping every quote of
 * every JSON document in JavaScript. A row object's keys are its field names; `ord` numbers the rows.
 */
const recordset = <T>(columns: readonly Column<T>[]) =>
  `ROWS FROM (json_to_recordset($1::json) AS (${columns.map(([, field, type]) => `"${field}" ${type}`).join(', ')}))
    WITH ORDINALITY AS v(${names(columns)}, ord)`;

/** Inserts or replaces rows in first-write order (their insertion and keyset order); `nulled`: a column written as null. */
function recordsetUpsert<T>(table: string, columns: readonly Column<T>[], upsert: string, nulled = ''): string {
  const list = names(columns);
  return `INSERT INTO ${table} (${list}${nulled && `, ${nulled}`})
    SELECT ${list}${nulled && ', NULL'} FROM ${recordset(columns)} ORDER BY ord ${upsert}`;
}
const ENTITIES_PUT = recordsetUpsert('entities', ENTITY_COLUMNS, ENTITY_UPSERT);
/** A record written is live: `removed` is null. */
const RECORDS_PUT = recordsetUpsert('records', RECORD_COLUMNS, RECORD_UPSERT, 'removed');
const FEED_INSERT = `INSERT INTO feed (${names(FEED_COLUMNS)}) SELECT ${names(FEED_COLUMNS)} FROM ${recordset(FEED_COLUMNS)}`;

/**
 * Entities as `ENTITIES_PUT` reads them: a state that is an object or array stays one, its JSON text is
 * then the column's value as JSON.stringify wrote it; any other state goes as its JSON text.
 */
function entityRows(list: readonly Entity<unknown>[]): readonly Entity<unknown>[] {
  const nested = (state: unknown) => typeof state === 'object' && state !== null;
  if (list.every((e) => nested(e.state))) return list;
  return list.map((e) => (nested(e.state) ? e : { ...e, state: JSON.stringify(e.state) }));
}

/** A UTF-16 surrogate without its other half. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * The rows of a `recordset` write as its one parameter. JSON.stringify writes a `\u` escape only for a
 * control character or a lone surrogate; PostgreSQL refuses a lone surrogate or a NUL escaped in JSON,
 * where the same value as a plain string parameter is sent as UTF-8 (a lone surrogate as U+FFFD) and an
 * escape inside a state's JSON text is kept as written. So rows holding one go the long way and are
 * stored as before: each string with its lone surrogates replaced, a nested state as its JSON text.
 */
function rowsParam(rows: readonly object[]): string {
  const text = JSON.stringify(rows);
  if (!text.includes('\\u')) return text;
  const plain = (value: unknown) =>
    typeof value === 'string'
      ? value.replace(LONE_SURROGATE, '\ufffd')
      : typeof value === 'object' && value !== null
        ? JSON.stringify(value)
        : value;
  return JSON.stringify(rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, plain(v)]))));
}

/** A statement and its values: a read `lockedRow` runs with or without its row lock. */
type Statement = [text: string, values: unknown[]];

/**
 * The `WriteTx` of one READ COMMITTED transaction. SQLite has one writer, so a transaction's reads
 * stay true until it commits; here every read locks what it read until the transaction ends:
 * - a team's `feed_heads` row is its write lock, taken before the first row of that team is
 *   locked, so writers of one team queue in one place (no deadlock between them) and `appendFeed`
 *   increments a head this transaction already holds;
 * - rows are read `FOR UPDATE` (a waiting reader then gets the committed new version);
 * - a key read as absent gets an advisory lock when the transaction writes it, and is checked to be
 *   still absent then, so two writers cannot both create it.
 */
export function postgresWriteTx(trx: Db, schema: string): WriteTx {
  const lockedTeams = new Set<string>();

  const lockTeam = async (team: string | null | undefined): Promise<void> => {
    if (team == null || lockedTeams.has(team)) return;
    // The no-op update locks the head row (creating it at 0 when the team has none yet).
    await sql`INSERT INTO feed_heads AS h (team, last_pos) VALUES (${team}, 0)
      ON CONFLICT (team) DO UPDATE SET last_pos = h.last_pos`.execute(trx);
    lockedTeams.add(team);
  };

  /**
   * Keys read as absent and not locked yet, by lock name. Locking each at its read cost two more round
   * trips (the lock, and a read in a new snapshot); a transaction that creates rows reads hundreds of
   * absent keys. The keys are locked when the transaction writes them, all of a batch at once, and
   * checked to be still absent; a key another writer created meanwhile rolls this transaction back to
   * run again (it then reads the row).
   */
  const unverified = new Map<string, { space: LockSpace; kind: string; id: string }>();

  /**
   * Locks the given keys read as absent and checks they still are. Whoever holds one may be waiting
   * for a team this transaction holds (it creates the row, then appends to the feed): holding a team,
   * only try, and on failure roll back to run again, rather than wait for PostgreSQL to find the
   * deadlock (deadlock_timeout, 1 s).
   */
  const verifyAbsent = async (names: readonly string[]): Promise<void> => {
    const keys = [...new Set(names)].filter((name) => unverified.has(name)).sort();
    if (keys.length === 0) return;
    if (lockedTeams.size === 0) {
      await sql`SELECT pg_advisory_xact_lock(hashtextextended(n, 0)) FROM unnest(${keys}::text[]) AS n`.execute(trx);
    } else {
      const [got] = await rows(
        trx,
        sql`SELECT bool_and(pg_try_advisory_xact_lock(hashtextextended(n, 0))) AS ok FROM unnest(${keys}::text[]) AS n`,
      );
      if (got?.ok !== true) throw new WriteConflict();
    }
    // A new statement, so a new snapshot: rows committed before the locks were taken are seen.
    const of = (space: LockSpace) => keys.map((k) => unverified.get(k)!).filter((k) => k.space === space);
    const [entities, records, meta] = [of('entity'), of('record'), of('meta')];
    const [taken] = await rows(
      trx,
      sql`SELECT EXISTS (SELECT 1 FROM entities e JOIN unnest(${col(entities, 'kind')}::text[], ${col(entities, 'id')}::text[])
            AS k(kind, id) ON e.kind = k.kind AND e.id = k.id)
          OR EXISTS (SELECT 1 FROM records r JOIN unnest(${col(records, 'kind')}::text[], ${col(records, 'id')}::text[])
            AS k(kind, id) ON r.kind = k.kind AND r.id = k.id)
          OR EXISTS (SELECT 1 FROM meta m WHERE m.key = ANY(${col(meta, 'id')}::text[])) AS taken`,
    );
    if (taken?.taken === true) throw new WriteConflict();
    for (const key of keys) unverified.delete(key);
  };
  const lockName = (space: LockSpace, key: string) => `${schema}:${space}:${key}`;

  /** Before record rows are replaced: the entries that borrow their JSON (see `WriteSet`) get a copy. */
  const keepSupersededBodies = async (list: readonly { kind: string; id: string }[]): Promise<void> => {
    await sql`UPDATE feed f SET body = r.json
      FROM unnest(${col(list, 'kind')}::text[], ${col(list, 'id')}::text[]) AS k(kind, id)
      JOIN records r ON r.kind = k.kind AND r.id = k.id
      WHERE f.kind = k.kind AND f.id = k.id AND f.body IS NULL AND f.removed IS NULL`.execute(trx);
  };

  /**
   * Reads one row and leaves it locked, its team first: before this transaction holds any team it
   * peeks without a lock to learn the row's team and takes that, then locks the row (a read that
   * waits for the row then sees its newest committed version). An absent row cannot be locked; its
   * key is remembered and locked when it is written (`verifyAbsent`).
   */
  const lockedRow = async (
    space: LockSpace,
    kind: string,
    id: string,
    query: (lock: boolean) => Statement,
  ): Promise<Row | undefined> => {
    if (space !== 'meta' && lockedTeams.size === 0) {
      const [peek] = await run(trx, ...query(false));
      if (peek) await lockTeam(peek.team as string | null);
    }
    const [row] = await run(trx, ...query(true));
    await lockTeam(row?.team as string | null | undefined);
    const name = lockName(space, space === 'meta' ? id : `${kind}:${id}`);
    if (!row) unverified.set(name, { space, kind, id });
    return row;
  };

  return {
    getEntity: async <S>(kind: EntityKind, id: string) =>
      toEntity<S>(await lockedRow('entity', kind, id, (lock) => [lock ? SQL.entityLocked : SQL.entity, [kind, id]])),
    findEntities: async <S>(kind: EntityKind, by: { team?: string; parent?: string }) => {
      await lockTeam(by.team);
      const found = await run(trx, SQL.entitiesLocked[entityLookup(by)], entityLookupValues(kind, by));
      for (const r of found) await lockTeam(r.team as string | null);
      return found.map((r) => toEntity<S>(r) as Entity<S>);
    },
    putEntity: async <S>(e: Entity<S>) => {
      await lockTeam(e.team);
      await verifyAbsent([lockName('entity', `${e.kind}:${e.id}`)]);
      await run(trx, SQL.putEntity, [e.kind, e.id, e.team, e.parent, JSON.stringify(e.state)]);
    },
    deleteEntity: async (kind: EntityKind, id: string) => {
      await run(trx, SQL.deleteEntity, [kind, id]);
    },
    getRecord: async (kind: RecordKind, id: string) =>
      toStored(await lockedRow('record', kind, id, (lock) => [lock ? SQL.recordLocked : SQL.record, [kind, id]])),
    putRecord: async (r: RecordRow) => {
      await lockTeam(r.team);
      await verifyAbsent([lockName('record', `${r.kind}:${r.id}`)]);
      await run(trx, SQL.keepSupersededBody, [r.kind, r.id, r.kind, r.id]);
      const values = [r.kind, r.id, r.team, r.lead, r.board, r.stage, r.status, r.email, r.phone, r.version];
      await run(trx, SQL.putRecord, [...values, r.updatedAt, r.json]);
    },
    removeRecord: async (kind: RecordKind, id: string, reason: RemovalReason, version: number, at: string) => {
      await run(trx, SQL.removeRecord, [reason, version, at, kind, id]);
    },
    appendFeed: async (e: FeedEntry) => {
      // The upsert locks the team's head row until this transaction ends (if it did not hold it
      // already): a second writer to the team waits for that lock and so reads the incremented head
      // only after this transaction committed or rolled back. Commit order = feed order.
      const [head] = await run(trx, SQL.nextFeedPos, [e.team]);
      lockedTeams.add(e.team);
      const pos = asNumber(head?.last_pos);
      await run(trx, SQL.insertFeed, [e.team, pos, e.kind, e.id, e.version, e.recordedAt, e.body, e.removed]);
      return pos;
    },
    purgeFeed: async (kind: FeedKind, id: string) => {
      await run(trx, SQL.purgeFeed, [kind, id]);
    },
    getMany: async (keys) => {
      const { entities, records } = keys;
      const [ek, ei, rk, ri] = [col(entities, 'kind'), col(entities, 'id'), col(records, 'kind'), col(records, 'id')];
      // Teams first, as one read does it: learn the rows' teams without a lock, take those not held
      // yet (in name order), then lock the rows.
      const teams = await rows(
        trx,
        sql`SELECT e.team FROM entities e JOIN unnest(${ek}::text[], ${ei}::text[]) AS k(kind, id)
            ON e.kind = k.kind AND e.id = k.id WHERE e.team IS NOT NULL
          UNION SELECT r.team FROM records r JOIN unnest(${rk}::text[], ${ri}::text[]) AS k(kind, id)
            ON r.kind = k.kind AND r.id = k.id
          ORDER BY 1`,
      );
      for (const t of teams) await lockTeam(t.team as string);
      const foundEntities = await rows(
        trx,
        sql`SELECT e.kind, e.id, e.team, e.parent, e.state FROM entities e
          JOIN unnest(${ek}::text[], ${ei}::text[]) AS k(kind, id) ON e.kind = k.kind AND e.id = k.id FOR UPDATE OF e`,
      );
      const foundRecords = await rows(
        trx,
        sql`SELECT r.seq, r.kind, r.id, r.team, r.version, r.json, r.removed FROM records r
          JOIN unnest(${rk}::text[], ${ri}::text[]) AS k(kind, id) ON r.kind = k.kind AND r.id = k.id FOR UPDATE OF r`,
      );
      // A row that moved to another team between the peek and the lock.
      for (const r of [...foundEntities, ...foundRecords]) await lockTeam(r.team as string | null);
      const present = new Set<string>();
      for (const r of foundEntities) present.add(lockName('entity', `${r.kind}:${r.id}`));
      for (const r of foundRecords) present.add(lockName('record', `${r.kind}:${r.id}`));
      for (const k of entities) {
        const name = lockName('entity', `${k.kind}:${k.id}`);
        if (!present.has(name)) unverified.set(name, { space: 'entity', kind: k.kind, id: k.id });
      }
      for (const k of records) {
        const name = lockName('record', `${k.kind}:${k.id}`);
        if (!present.has(name)) unverified.set(name, { space: 'record', kind: k.kind, id: k.id });
      }
      return {
        entities: foundEntities.map((r) => toEntity(r) as Entity<unknown>),
        records: foundRecords.map((r) => toStored(r) as StoredRecord),
      };
    },
    lockFeedHead: async (team: string) => {
      // The no-op upsert locks the head row (creating it at 0) until this transaction ends.
      const [head] = await rows(
        trx,
        sql`INSERT INTO feed_heads AS h (team, last_pos) VALUES (${team}, 0)
          ON CONFLICT (team) DO UPDATE SET last_pos = h.last_pos RETURNING last_pos`,
      );
      lockedTeams.add(team);
      return Number(head?.last_pos ?? 0);
    },
    applyWrites: async (w: WriteSet) => {
      // Every team written is locked first (rows a transaction writes belong to teams it holds).
      for (const e of w.putEntities) await lockTeam(e.team);
      for (const r of w.putRecords) await lockTeam(r.team);
      await verifyAbsent([
        ...w.putEntities.map((e) => lockName('entity', `${e.kind}:${e.id}`)),
        ...w.putRecords.map((r) => lockName('record', `${r.kind}:${r.id}`)),
      ]);
      // One statement per table and kind of change, the rows passed as one JSON array (upserts and the
      // feed, see `recordset`) or as arrays of keys (unnest): the statement text and its plan stay the
      // same whatever the number of rows.
      if (w.deleteEntities.length > 0) {
        await sql`DELETE FROM entities e USING unnest(${col(w.deleteEntities, 'kind')}::text[],
          ${col(w.deleteEntities, 'id')}::text[]) AS d(kind, id) WHERE e.kind = d.kind AND e.id = d.id`.execute(trx);
      }
      if (w.putEntities.length > 0) {
        await run(trx, ENTITIES_PUT, [rowsParam(entityRows(w.putEntities))]);
      }
      if (w.putRecords.length > 0) {
        if (w.supersede.length > 0) await keepSupersededBodies(w.supersede);
        await run(trx, RECORDS_PUT, [rowsParam(w.putRecords)]);
      }
      if (w.removeRecords.length > 0) {
        const list = w.removeRecords;
        await sql`UPDATE records r SET removed = v.reason, version = v.version, updated_at = v.at, json = NULL,
            email = NULL, phone = NULL
          FROM unnest(${col(list, 'kind')}::text[], ${col(list, 'id')}::text[], ${col(list, 'reason')}::text[],
            ${col(list, 'version')}::integer[], ${col(list, 'at')}::text[]) AS v(kind, id, reason, version, at)
          WHERE r.kind = v.kind AND r.id = v.id`.execute(trx);
      }
      if (w.purgeFeed.length > 0) {
        await sql`DELETE FROM feed f USING unnest(${col(w.purgeFeed, 'kind')}::text[], ${col(w.purgeFeed, 'id')}::text[])
          AS p(kind, id) WHERE f.kind = p.kind AND f.id = p.id`.execute(trx);
      }
      if (w.appendFeed.length > 0) {
        const list = borrowBodies(w);
        for (const e of list) if (!lockedTeams.has(e.team)) throw new Error(`feed head of ${e.team} is not locked`);
        await run(trx, FEED_INSERT, [rowsParam(list)]);
        const heads = new Map<string, number>();
        for (const e of list) heads.set(e.team, Math.max(e.pos, heads.get(e.team) ?? 0));
        await sql`UPDATE feed_heads h SET last_pos = greatest(h.last_pos, v.last_pos)
          FROM unnest(${[...heads.keys()]}::text[], ${[...heads.values()]}::bigint[]) AS v(team, last_pos)
          WHERE h.team = v.team`.execute(trx);
      }
    },
    getMeta: async (key: string) => {
      const row = await lockedRow('meta', '', key, (lock) => [lock ? SQL.metaLocked : SQL.meta, [key]]);
      return row?.value as string | undefined;
    },
    setMeta: async (key: string, value: string) => {
      await verifyAbsent([lockName('meta', key)]);
      await run(trx, SQL.putMeta, [key, value]);
    },
  };
}
