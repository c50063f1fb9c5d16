import { sql } from 'kysely';
import { borrowBodies } from '../sql/borrow-bodies.js';
import {
  type Column,
  ENTITY_COLUMNS,
  ENTITY_UPSERT,
  FEED_COLUMNS,
  names,
  RECORD_COLUMNS,
  RECORD_UPSERT,
} from '../sql/columns.js';
import type { Entity, WriteSet } from '../types.js';
import { type Db, run } from './postgres-connection.js';

// A transaction's writes on PostgreSQL: one statement per table and kind of change, whatever the number of
// rows, so a batch costs a few round trips (SQLite writes a cached statement per row, sqlite-write-set.ts).

/** One field of every row, as the array a `unnest` parameter takes (undefined becomes null). */
export function col<T, K extends keyof T>(list: readonly T[], key: K): T[K][] {
  return list.map((item) => item[key] ?? (null as T[K]));
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

/** Before record rows are replaced: the entries that borrow their JSON (see `WriteSet`) get a copy. */
export async function keepSupersededBodies(trx: Db, list: readonly { kind: string; id: string }[]): Promise<void> {
  await sql`UPDATE feed f SET body = r.json
    FROM unnest(${col(list, 'kind')}::text[], ${col(list, 'id')}::text[]) AS k(kind, id)
    JOIN records r ON r.kind = k.kind AND r.id = k.id
    WHERE f.kind = k.kind AND f.id = k.id AND f.body IS NULL AND f.removed IS NULL`.execute(trx);
}

/**
 * Applies a transaction's buffered writes in `WriteSet` order, the rows passed as one JSON array (upserts
 * and the feed, see `recordset`) or as arrays of keys (unnest). The caller holds every team written.
 */
export async function applyPostgresWriteSet(trx: Db, w: WriteSet): Promise<void> {
  if (w.deleteEntities.length > 0) {
    await sql`DELETE FROM entities e USING unnest(${col(w.deleteEntities, 'kind')}::text[],
      ${col(w.deleteEntities, 'id')}::text[]) AS d(kind, id) WHERE e.kind = d.kind AND e.id = d.id`.execute(trx);
  }
  if (w.putEntities.length > 0) {
    await run(trx, ENTITIES_PUT, [rowsParam(entityRows(w.putEntities))]);
  }
  if (w.putRecords.length > 0) {
    if (w.supersede.length > 0) await keepSupersededBodies(trx, w.supersede);
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
    await run(trx, FEED_INSERT, [rowsParam(list)]);
    const heads = new Map<string, number>();
    for (const e of list) heads.set(e.team, Math.max(e.pos, heads.get(e.team) ?? 0));
    await sql`UPDATE feed_heads h SET last_pos = greatest(h.last_pos, v.last_pos)
      FROM unnest(${[...heads.keys()]}::text[], ${[...heads.values()]}::bigint[]) AS v(team, last_pos)
      WHERE h.team = v.team`.execute(trx);
  }
}
