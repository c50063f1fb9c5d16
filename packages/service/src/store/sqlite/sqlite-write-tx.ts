import type { FeedKind, RecordKind, RemovalReason } from '../../schemas/enums.js';
import type { IntakeStatements } from '../sql/intake-statements.js';
import { toEntity, toStored } from '../sql/rows.js';
import { entityLookup, entityLookupValues, type Statements } from '../sql/statements.js';
import type { WriteTx } from '../store.js';
import type { Entity, EntityKind, FeedEntry, RecordRow, StoredRecord, WriteSet } from '../types.js';
import type { SqliteConnection } from './sqlite-connection.js';
import { SqliteIntakeTx } from './sqlite-intake-tx.js';
import {
  applySqliteWriteSet,
  insertFeedRow,
  keepSupersededBody,
  putEntityRow,
  putRecordRow,
  removeRecordRow,
  type SqliteRowTarget,
} from './sqlite-write-set.js';

/**
 * The `WriteTx` of the SQLite store, on its writer connection inside `BEGIN IMMEDIATE` (sqlite-store.ts).
 * That connection is the database's only writer, so what a transaction reads stays true until it ends:
 * no read takes a lock (PostgreSQL's does, postgres-write-tx.ts).
 */
export class SqliteWriteTx implements WriteTx, SqliteRowTarget {
  readonly intake: SqliteIntakeTx;

  constructor(
    readonly writer: SqliteConnection,
    readonly sql: Statements,
    readonly onErasure: () => void,
    intakeSql: IntakeStatements,
  ) {
    this.intake = new SqliteIntakeTx(writer, intakeSql);
  }

  async getEntity<S>(kind: EntityKind, id: string): Promise<Entity<S> | undefined> {
    return toEntity<S>(this.writer.prepared(this.sql.entity).get(kind, id));
  }

  async findEntities<S>(kind: EntityKind, by: { team?: string; parent?: string }): Promise<Entity<S>[]> {
    return this.writer
      .prepared(this.sql.entities[entityLookup(by)])
      .all(...entityLookupValues(kind, by))
      .map((row) => toEntity<S>(row) as Entity<S>);
  }

  async putEntity<S>(e: Entity<S>): Promise<void> {
    putEntityRow(this, e);
  }

  async deleteEntity(kind: EntityKind, id: string): Promise<void> {
    this.writer.prepared(this.sql.deleteEntity).run(kind, id);
  }

  async getRecord(kind: RecordKind, id: string): Promise<StoredRecord | undefined> {
    return toStored(this.writer.prepared(this.sql.record).get(kind, id));
  }

  async putRecord(r: RecordRow): Promise<void> {
    keepSupersededBody(this, r.kind, r.id);
    putRecordRow(this, r);
  }

  async removeRecord(kind: RecordKind, id: string, reason: RemovalReason, version: number, at: string): Promise<void> {
    removeRecordRow(this, { kind, id, reason, version, at });
  }

  async appendFeed(e: FeedEntry): Promise<number> {
    const head = this.writer.prepared(this.sql.nextFeedPos).get(e.team) as { last_pos: number };
    insertFeedRow(this, { ...e, pos: head.last_pos });
    return head.last_pos;
  }

  async purgeFeed(kind: FeedKind, id: string): Promise<void> {
    this.writer.prepared(this.sql.purgeFeed).run(kind, id);
  }

  /** The writer connection is the only writer: the head read stays true until this transaction ends. */
  async lockFeedHead(team: string): Promise<number> {
    return (this.writer.prepared(this.sql.feedHead).get(team) as { last_pos: number } | undefined)?.last_pos ?? 0;
  }

  async applyWrites(writes: WriteSet): Promise<void> {
    applySqliteWriteSet(this, writes);
  }

  async getMeta(key: string): Promise<string | undefined> {
    return this.writer.prepared(this.sql.meta).get(key)?.value as string | undefined;
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.writer.prepared(this.sql.putMeta).run(key, value);
  }
}
