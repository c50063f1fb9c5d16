import type { IntakeIdRow, IntakeSourceRow, QuarantineFilter, QuarantineRow } from '../intake-types.js';
import {
  appliedIdValues,
  type IntakeStatements,
  quarantineValues,
  sourceParams,
  toIntakeId,
  toQuarantine,
  toSource,
} from '../sql/intake-statements.js';
import type { IntakeWriteTx } from '../store.js';
import type { SqliteConnection } from './sqlite-connection.js';

/**
 * The intake's tables inside a SQLite write transaction. The writer connection is the only writer, so the
 * source's row needs no lock: no other batch runs until this transaction ends.
 */
export class SqliteIntakeTx implements IntakeWriteTx {
  constructor(
    private readonly writer: SqliteConnection,
    private readonly sql: IntakeStatements,
  ) {}

  async lockSource(source: string, now: number): Promise<IntakeSourceRow> {
    this.writer.prepared(this.sql.ensureSource).run(source, now);
    return toSource(this.writer.prepared(this.sql.sourceLocked).get(source) as Record<string, unknown>);
  }

  async putSource(row: IntakeSourceRow): Promise<void> {
    const statement = this.sql.putSource;
    this.writer.prepared(statement.text).run(...statement.values(sourceParams(row)));
  }

  async appliedIds(source: string, ids: readonly string[]): Promise<IntakeIdRow[]> {
    if (ids.length === 0) return [];
    return this.writer.prepared(this.sql.appliedIds).all(source, JSON.stringify(ids)).map(toIntakeId);
  }

  async putAppliedIds(rows: readonly IntakeIdRow[]): Promise<void> {
    const statement = this.writer.prepared(this.sql.putAppliedId);
    for (const row of rows) statement.run(...appliedIdValues(row));
  }

  async quarantine(filter: QuarantineFilter): Promise<QuarantineRow[]> {
    const { text, values } = this.sql.quarantine(filter);
    return this.writer
      .prepared(text)
      .all(...values)
      .map(toQuarantine);
  }

  async blockedLanes(source: string): Promise<string[]> {
    return this.writer
      .prepared(this.sql.blockedLanes)
      .all(source)
      .map((row) => String(row.lane));
  }

  async putQuarantine(rows: readonly QuarantineRow[]): Promise<void> {
    const statement = this.writer.prepared(this.sql.putQuarantine);
    for (const row of rows) statement.run(...quarantineValues(row));
  }

  async deleteQuarantine(keys: readonly { source: string; seq: number }[]): Promise<void> {
    const statement = this.writer.prepared(this.sql.deleteQuarantine);
    for (const key of keys) statement.run(key.source, key.seq);
  }
}
