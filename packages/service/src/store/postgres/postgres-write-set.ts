import { sql } from 'kysely';
import { borrowBodies } from '../sql/borrow-bodies.js';
import {
  type Column,
  ENTITY_COLUMNS,
  ENTITY_UPSERT,
  type EntityRow,
  entityValues,
  FEED_COLUMNS,
  names,
  RECORD_COLUMNS,
  RECORD_UPSERT,
} from '../sql/columns.js';
import type { Entity, EntityKind, WriteSet } from '../types.js';
import { type Db, run } from './postgres-connection.js';

// A transaction's writes on PostgreSQL: one statement per table and kind of change, whatever the number of
// rows, so a batch costs a few round trips (SQLite writes a cached statement per row, sqlite-write-set.ts).

/** One field of every row, as the array a `unnest` parameter takes (undefined becomes null). */
export function col<T, K extends keyof T>(list: readonly T[], key: K): T[K][] {
  return list.map((item) => item[key] ?? (null as T[K]));
}

/**
 * Multi-row writes, so the statement text and its plan stay the same whatever the number of rows
 * (PostgreSQL's way; SQLite runs a prepared statement per row). Each column's values go as one text
 * parameter, joined by a control character (`SEPARATOR`, `NULL_VALUE` for null), and the database splits
 * it (`string_to_array`): nothing is escaped in JavaScript or parsed as JSON by the database. A JSON text
 * (a record's JSON, a feed body, an entity's state) never holds a raw control character; a row whose
 * other text holds one goes as JSON instead (`recordset`). Every column text starts with a null that
 * stands for no row (`ord` 1), so an empty string is a value, never an empty list. `ord` numbers the rows.
 */
const SEPARATOR = '\x1f';
const NULL_VALUE = '\x1e';
/** Whether a text holds what no value in a column text may: the two marks, or NUL (which no text holds). */
const unsplittable = (text: string) => text.includes(SEPARATOR) || text.includes(NULL_VALUE) || text.includes('\0');
/** Fields whose values are JSON texts. */
const JSON_FIELDS: ReadonlySet<string> = new Set(['json', 'body', 'state']);

const columnText = (i: number, type: string) => `unnest(string_to_array($${i + 1}, E'\\x1f', E'\\x1e')::${type}[])`;
const columnsFrom = <T>(columns: readonly Column<T>[]) =>
  `ROWS FROM (${columns.map(([, , type], i) => columnText(i, type)).join(', ')})
    WITH ORDINALITY AS v(${names(columns)}, ord) WHERE ord > 1`;

/**
 * The same rows passed as one JSON array of row objects (one parameter, serialized by JSON.stringify) and
 * read back as typed columns by `json_to_recordset`: for rows a column text cannot carry. A row object's
 * keys are its field names.
 */
const recordset = <T>(columns: readonly Column<T>[]) =>
  `ROWS FROM (json_to_recordset($1::json) AS (${columns.map(([, field, type]) => `"${field}" ${type}`).join(', ')}))
    WITH ORDINALITY AS v(${names(columns)}, ord)`;

/** A multi-row write both ways: by column texts, and by one JSON array. */
interface MultiRow {
  columns: string;
  json: string;
}

/** Inserts or replaces rows in first-write order (their insertion and keyset order); `nulled`: a column written as null. */
function upsertRows<T>(table: string, columns: readonly Column<T>[], upsert: string, nulled = ''): MultiRow {
  const list = names(columns);
  const from = (rows: string) => `INSERT INTO ${table} (${list}${nulled && `, ${nulled}`})
    SELECT ${list}${nulled && ', NULL'} FROM ${rows} ORDER BY ord ${upsert}`;
  return { columns: from(columnsFrom(columns)), json: from(recordset(columns)) };
}
const ENTITIES_PUT = upsertRows('entities', ENTITY_COLUMNS, ENTITY_UPSERT);
/** A record written is live: `removed` is null. */
const RECORDS_PUT = upsertRows('records', RECORD_COLUMNS, RECORD_UPSERT, 'removed');
const feedInsert = (rows: string) =>
  `INSERT INTO feed (${names(FEED_COLUMNS)}) SELECT ${names(FEED_COLUMNS)} FROM ${rows}`;
const FEED_INSERT: MultiRow = {
  columns: feedInsert(columnsFrom(FEED_COLUMNS)),
  json: feedInsert(recordset(FEED_COLUMNS)),
};

/** Each column's values as one text (see `columnsFrom`), or undefined when a value other than a JSON text holds a mark or NUL. */
function columnTexts<T>(columns: readonly Column<T>[], rows: readonly T[]): string[] | undefined {
  const texts: string[] = [];
  const parts: string[] = new Array(rows.length + 1);
  for (const [, field] of columns) {
    let nulls = false;
    parts[0] = '';
    for (let i = 0; i < rows.length; i++) {
      const value = (rows[i] as T)[field] as unknown;
      const absent = value === null || value === undefined;
      nulls ||= absent;
      parts[i + 1] = absent ? '' : typeof value === 'string' ? value : String(value);
    }
    // The values alone, searched at once (short ids, codes and numbers; a JSON text needs no search).
    if (!JSON_FIELDS.has(field) && unsplittable(parts.join(''))) return undefined;
    parts[0] = NULL_VALUE;
    if (nulls) {
      for (let i = 0; i < rows.length; i++) {
        const value = (rows[i] as T)[field] as unknown;
        if (value === null || value === undefined) parts[i + 1] = NULL_VALUE;
      }
    }
    texts.push(parts.join(SEPARATOR));
  }
  return texts;
}

/** Runs a multi-row write: by column texts, else (a value a column text cannot carry) by one JSON array. */
async function writeRows<T extends object>(
  trx: Db,
  write: MultiRow,
  columns: readonly Column<T>[],
  rows: readonly T[],
): Promise<void> {
  const texts = columnTexts(columns, rows);
  if (texts) await run(trx, write.columns, texts);
  else await run(trx, write.json, [rowsParam(rows)]);
}

/** Entities as written: the state serialized as `entityValues` stores it. */
function entityRows(list: readonly Entity<unknown>[]): EntityRow[] {
  return list.map((e) => {
    const [kind, id, team, parent, state] = entityValues(e) as [
      EntityKind,
      string,
      string | null,
      string | null,
      string,
    ];
    return { kind, id, team, parent, state };
  });
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
    await writeRows(trx, ENTITIES_PUT, ENTITY_COLUMNS, entityRows(w.putEntities));
  }
  if (w.putRecords.length > 0) {
    if (w.supersede.length > 0) await keepSupersededBodies(trx, w.supersede);
    await writeRows(trx, RECORDS_PUT, RECORD_COLUMNS, w.putRecords);
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
    await writeRows(trx, FEED_INSERT, FEED_COLUMNS, list);
    const heads = new Map<string, number>();
    for (const e of list) heads.set(e.team, Math.max(e.pos, heads.get(e.team) ?? 0));
    await sql`UPDATE feed_heads h SET last_pos = greatest(h.last_pos, v.last_pos)
      FROM unnest(${[...heads.keys()]}::text[], ${[...heads.values()]}::bigint[]) AS v(team, last_pos)
      WHERE h.team = v.team`.execute(trx);
  }
}
