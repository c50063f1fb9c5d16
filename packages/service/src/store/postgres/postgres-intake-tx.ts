import type { IntakeIdRow, IntakeSourceRow, QuarantineFilter, QuarantineRow } from '../intake-types.js';
import { POSTGRES } from '../sql/dialect.js';
import {
  intakeStatementsFor,
  quarantineValues,
  sourceParams,
  toIntakeId,
  toQuarantine,
  toSource,
} from '../sql/intake-statements.js';
import type { IntakeWriteTx } from '../store.js';
import { type Db, run } from './postgres-connection.js';

const SQL = intakeStatementsFor(POSTGRES);

/** Many applied ids in one statement: one array per column. */
const PUT_APPLIED_IDS = `INSERT INTO intake_ids (source, id, digest, seq, applied_at)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])`;

/**
 * The intake's tables inside a PostgreSQL write transaction. The source's row is created when missing
 * and then read `FOR UPDATE`: a second batch of the same source, in any process or on any host, waits
 * for this transaction to end and then reads the position it committed. A transaction locks its sources
 * before any team (`lockSource` comes first), so source and team locks never wait on each other in a circle.
 */
export class PostgresIntakeTx implements IntakeWriteTx {
  constructor(private readonly trx: Db) {}

  async lockSource(source: string, now: number): Promise<IntakeSourceRow> {
    await run(this.trx, SQL.ensureSource, [source, now]);
    const [row] = await run(this.trx, SQL.sourceLocked, [source]);
    return toSource(row as Record<string, unknown>);
  }

  async putSource(row: IntakeSourceRow): Promise<void> {
    await run(this.trx, SQL.putSource.text, SQL.putSource.values(sourceParams(row)));
  }

  async appliedIds(source: string, ids: readonly string[]): Promise<IntakeIdRow[]> {
    if (ids.length === 0) return [];
    return (await run(this.trx, SQL.appliedIds, [source, JSON.stringify(ids)])).map(toIntakeId);
  }

  async putAppliedIds(rows: readonly IntakeIdRow[]): Promise<void> {
    if (rows.length === 0) return;
    await run(this.trx, PUT_APPLIED_IDS, [
      rows.map((r) => r.source),
      rows.map((r) => r.id),
      rows.map((r) => r.digest),
      rows.map((r) => r.seq),
      rows.map((r) => r.appliedAt),
    ]);
  }

  async quarantine(filter: QuarantineFilter): Promise<QuarantineRow[]> {
    const { text, values } = SQL.quarantine(filter);
    return (await run(this.trx, text, values)).map(toQuarantine);
  }

  async blockedLanes(source: string): Promise<string[]> {
    return (await run(this.trx, SQL.blockedLanes, [source])).map((row) => String(row.lane));
  }

  async putQuarantine(rows: readonly QuarantineRow[]): Promise<void> {
    for (const row of rows) await run(this.trx, SQL.putQuarantine, quarantineValues(row));
  }

  async deleteQuarantine(keys: readonly { source: string; seq: number }[]): Promise<void> {
    for (const key of keys) await run(this.trx, SQL.deleteQuarantine, [key.source, key.seq]);
  }
}
