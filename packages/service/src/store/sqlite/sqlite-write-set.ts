import type { RecordKind } from '../../schemas/enums.js';
import { borrowBodies } from '../sql/borrow-bodies.js';
import { entityValues, FEED_COLUMNS, RECORD_COLUMNS, valuesOf } from '../sql/columns.js';
import type { Statements } from '../sql/statements.js';
import type { Entity, FeedRow, RecordRemoval, RecordRow, WriteSet } from '../types.js';
import type { SqliteConnection } from './sqlite-connection.js';

// A transaction's writes on SQLite: one cached statement per row, since SQLite runs in this process and a
// row costs no round trip (PostgreSQL sends each table's rows as one statement, postgres-write-set.ts).

/** Where rows are written: the writer connection, the backend's statements, and whom to tell of an erasure. */
export interface SqliteRowTarget {
  readonly writer: SqliteConnection;
  readonly sql: Statements;
  /** A record was erased: its old versions may stay in WAL frames until a checkpoint. */
  readonly onErasure: () => void;
}

export function putEntityRow(t: SqliteRowTarget, e: Entity<unknown>): void {
  t.writer.prepared(t.sql.putEntity).run(...entityValues(e));
}

/** Before a record row is replaced: the entry borrowing its JSON gets its own copy (see `WriteSet`). */
export function keepSupersededBody(t: SqliteRowTarget, kind: RecordKind, id: string): void {
  const statement = t.sql.keepSupersededBody;
  t.writer.prepared(statement.text).run(...statement.values({ kind, id }));
}

export function putRecordRow(t: SqliteRowTarget, r: RecordRow): void {
  t.writer.prepared(t.sql.putRecord).run(...valuesOf(RECORD_COLUMNS, r));
}

export function removeRecordRow(t: SqliteRowTarget, r: RecordRemoval): void {
  if (r.reason === 'erased') t.onErasure();
  t.writer.prepared(t.sql.removeRecord.text).run(...t.sql.removeRecord.values(r));
}

export function insertFeedRow(t: SqliteRowTarget, e: FeedRow): void {
  t.writer.prepared(t.sql.insertFeed).run(...valuesOf(FEED_COLUMNS, e));
}

/** Applies a transaction's buffered writes in `WriteSet` order. */
export function applySqliteWriteSet(t: SqliteRowTarget, w: WriteSet): void {
  const deleteEntity = t.writer.prepared(t.sql.deleteEntity);
  for (const e of w.deleteEntities) deleteEntity.run(e.kind, e.id);
  for (const e of w.putEntities) putEntityRow(t, e);
  for (const r of w.supersede) keepSupersededBody(t, r.kind, r.id);
  for (const r of w.putRecords) putRecordRow(t, r);
  for (const r of w.removeRecords) removeRecordRow(t, r);
  const purge = t.writer.prepared(t.sql.purgeFeed);
  for (const p of w.purgeFeed) purge.run(p.kind, p.id);
  const heads = new Map<string, number>();
  for (const e of borrowBodies(w)) {
    insertFeedRow(t, e);
    heads.set(e.team, Math.max(e.pos, heads.get(e.team) ?? 0));
  }
  const head = t.writer.prepared(t.sql.raiseFeedHead);
  for (const [team, pos] of heads) head.run(team, pos);
}
