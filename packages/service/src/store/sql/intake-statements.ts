import type {
  IntakeIdRow,
  IntakeSourceRow,
  QuarantineFilter,
  QuarantineRow,
  QuarantineSummary,
} from '../intake-types.js';
import { type Dialect, numberedPlaceholders } from './dialect.js';
import { NamedStatement } from './named-statement.js';
import { asNumber, type Row } from './rows.js';

// The intake's statements (migration 0006_intake), written once for both backends like statements.ts,
// and the mapping of their rows.

const SOURCE = `SELECT source, last_seq, last_event_at, applied, duplicates, rejected, quarantined, updated_at
  FROM intake_sources`;
const QUARANTINE = `SELECT source, seq, id, lane, type, event, code, field, message, attempts, first_at, last_at
  FROM intake_quarantine`;

/** Which columns a quarantine filter binds, in placeholder order. */
function quarantineWhere(filter: QuarantineFilter): { where: string; values: unknown[] } {
  const where: string[] = [];
  const values: unknown[] = [];
  if (filter.source !== undefined) {
    where.push('source = ?');
    values.push(filter.source);
  }
  if (filter.lane !== undefined) {
    where.push('lane = ?');
    values.push(filter.lane);
  }
  if (filter.seq !== undefined) {
    where.push('seq = ?');
    values.push(filter.seq);
  }
  return { where: where.length > 0 ? `WHERE ${where.join(' AND ')}` : '', values };
}

export function intakeStatementsFor(d: Dialect) {
  const text = d.backend === 'postgres' ? numberedPlaceholders : (s: string) => s;
  const named = <P extends object>(s: string) => new NamedStatement<P>(s, d.backend);
  return {
    /** Creates the source's row at 0 unless it exists (the read that follows locks it). */
    ensureSource: text(`INSERT INTO intake_sources
      (source, last_seq, last_event_at, applied, duplicates, rejected, quarantined, updated_at)
      VALUES (?, 0, NULL, 0, 0, 0, 0, ?) ON CONFLICT (source) DO NOTHING`),
    sourceLocked: text(`${SOURCE} WHERE source = ?${d.forUpdate}`),
    sources: text(`${SOURCE} ORDER BY source`),
    putSource: named<Record<string, unknown>>(`UPDATE intake_sources SET last_seq = :lastSeq,
      last_event_at = :lastEventAt, applied = :applied, duplicates = :duplicates, rejected = :rejected,
      quarantined = :quarantined, updated_at = :updatedAt WHERE source = :source`),
    /** Applied ids of a source among ids passed as one JSON array. */
    appliedIds: text(
      `SELECT source, id, digest, seq, applied_at FROM intake_ids WHERE source = ? AND id IN (${d.jsonArrayItems})`,
    ),
    putAppliedId: text('INSERT INTO intake_ids (source, id, digest, seq, applied_at) VALUES (?, ?, ?, ?, ?)'),
    blockedLanes: text('SELECT DISTINCT lane FROM intake_quarantine WHERE source = ?'),
    quarantine: (filter: QuarantineFilter) => {
      const { where, values } = quarantineWhere(filter);
      return { text: text(`${QUARANTINE} ${where} ORDER BY source, seq`), values };
    },
    putQuarantine: text(`INSERT INTO intake_quarantine
      (source, seq, id, lane, type, event, code, field, message, attempts, first_at, last_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (source, seq) DO UPDATE SET lane = excluded.lane, code = excluded.code, field = excluded.field,
        message = excluded.message, attempts = excluded.attempts, last_at = excluded.last_at`),
    deleteQuarantine: text('DELETE FROM intake_quarantine WHERE source = ? AND seq = ?'),
    quarantineSummary: text(
      'SELECT source, count(*) AS events, min(first_at) AS oldest_at FROM intake_quarantine GROUP BY source ORDER BY source',
    ),
    /** A batch of expired ids (applied before `?`), at most `?` rows. */
    trimIds: text(`DELETE FROM intake_ids WHERE ${d.addressIn}SELECT ${d.rowAddress} FROM intake_ids
      WHERE applied_at < ? ORDER BY applied_at ${d.limit}?${d.addressInEnd}`),
  };
}

export type IntakeStatements = ReturnType<typeof intakeStatementsFor>;

/** A quarantined event's values in the column order of `putQuarantine`. */
export const quarantineValues = (q: QuarantineRow): unknown[] => [
  q.source,
  q.seq,
  q.id,
  q.lane,
  q.type,
  q.event,
  q.code,
  q.field,
  q.message,
  q.attempts,
  q.firstAt,
  q.lastAt,
];

/** An applied id's values in the column order of `putAppliedId`. */
export const appliedIdValues = (r: IntakeIdRow): unknown[] => [r.source, r.id, r.digest, r.seq, r.appliedAt];

/** A source's values by the names `putSource` binds. */
export const sourceParams = (s: IntakeSourceRow): Record<string, unknown> => ({ ...s, lastEventAt: s.lastEventAt });

const nullableNumber = (value: unknown): number | null => (value == null ? null : asNumber(value));

export function toSource(row: Row): IntakeSourceRow {
  return {
    source: String(row.source),
    lastSeq: asNumber(row.last_seq),
    lastEventAt: nullableNumber(row.last_event_at),
    applied: asNumber(row.applied),
    duplicates: asNumber(row.duplicates),
    rejected: asNumber(row.rejected),
    quarantined: asNumber(row.quarantined),
    updatedAt: asNumber(row.updated_at),
  };
}

export function toIntakeId(row: Row): IntakeIdRow {
  return {
    source: String(row.source),
    id: String(row.id),
    digest: String(row.digest),
    seq: nullableNumber(row.seq),
    appliedAt: asNumber(row.applied_at),
  };
}

export function toQuarantine(row: Row): QuarantineRow {
  return {
    source: String(row.source),
    seq: asNumber(row.seq),
    id: row.id == null ? null : String(row.id),
    lane: String(row.lane),
    type: String(row.type),
    event: String(row.event),
    code: String(row.code),
    field: row.field == null ? null : String(row.field),
    message: String(row.message),
    attempts: asNumber(row.attempts),
    firstAt: asNumber(row.first_at),
    lastAt: asNumber(row.last_at),
  };
}

export function toQuarantineSummary(row: Row): QuarantineSummary {
  return { source: String(row.source), events: asNumber(row.events), oldestAt: asNumber(row.oldest_at) };
}
