import type { Clock } from '../../clock.js';
import { AdminError } from '../../errors/admin-error.js';
import type { IntakeIdRow, IntakeSourceRow, QuarantineRow, Store, WriteTx } from '../../store/store.js';
import { type CrmOptions, DEFAULT_CRM_OPTIONS } from '../events/context.js';
import type { CrmEvent } from '../events/events.js';
import { eventDigest, withoutId } from './event-digest.js';
import { applyIsolated, type IsolatedItem, RestartBatch } from './isolated-apply.js';
import type { Refusal } from './lanes.js';

// The operator's commands on the intake's quarantine (write/commands/commands.ts lists them): retry a
// lane, a source or everything, and drop events. What they return names events by source, seq, id, type
// and lane, never by their values.

/** Which quarantined events a command takes: a lane (of every source, or of one), a source, or all. */
export interface QuarantineSelection {
  source?: string;
  lane?: string;
}

export interface RetryInput extends QuarantineSelection {
  /** The time of the retry (epoch ms), drawn by the caller: a retried transaction writes the same. */
  now: number;
  crm?: Partial<CrmOptions>;
}

/** One event a command touched, as the operator sees it. */
export interface QuarantineEventOutcome {
  source: string;
  seq: number;
  id: string | null;
  type: string;
  lane: string;
  /**
   * `applied`, `duplicate` (its id was applied meanwhile), `refused` again, or still `waiting`; `dropped`
   * (by the operator, or superseded by an erasure of its lane applied in the same retry).
   */
  outcome: 'applied' | 'duplicate' | 'refused' | 'waiting' | 'dropped';
  code: string;
}

export interface RetryResult {
  applied: number;
  duplicates: number;
  refused: number;
  waiting: number;
  events: QuarantineEventOutcome[];
}

const keyOf = (row: { source: string; seq: number }) => `${row.source}\u0000${row.seq}`;

/** A retry's transaction must run again with these refusals (by source and seq) set aside untried. */
class RetryRestart extends Error {
  constructor(readonly byRow: ReadonlyMap<string, Refusal>) {
    super('a refused event had written part of the retry; it runs again without it');
  }
}

const outcomeOf = (row: QuarantineRow, outcome: QuarantineEventOutcome['outcome'], code = row.code) => ({
  source: row.source,
  seq: row.seq,
  id: row.id,
  type: row.type,
  lane: row.lane,
  outcome,
  code,
});

/**
 * Applies the selected quarantined events again, lane by lane in seq order, in one transaction: an event
 * applied leaves the quarantine (its id recorded as applied); one refused again stays with one more
 * attempt, and the later events of its lane keep waiting. Its own transactions, like the intake: a refused
 * event that had written part of the run makes it run again without that event (isolated-apply.ts).
 */
export async function retryQuarantine(store: Store, input: RetryInput): Promise<RetryResult> {
  const crm = { ...DEFAULT_CRM_OPTIONS, ...input.crm };
  const clock: Clock = { now: () => input.now };
  let preset = new Map<string, Refusal>();
  for (;;) {
    try {
      return await store.write((tx) => retryIn(tx, clock, crm, input, preset));
    } catch (error) {
      if (!(error instanceof RetryRestart)) throw error;
      preset = new Map(error.byRow);
    }
  }
}

/** Locks the sources of the selected events (in name order, before any team), then reads the events again. */
async function lockedSelection(
  tx: WriteTx,
  selection: QuarantineSelection,
  now: number,
): Promise<{ rows: QuarantineRow[]; sources: Map<string, IntakeSourceRow> }> {
  const first = await tx.intake.quarantine(selection);
  const sources = new Map<string, IntakeSourceRow>();
  for (const source of [...new Set(first.map((r) => r.source))].sort())
    sources.set(source, await tx.intake.lockSource(source, now));
  // Events a batch added before its source was locked here are seen; sources that appeared since are left.
  const rows = (await tx.intake.quarantine(selection)).filter((r) => sources.has(r.source));
  return { rows, sources };
}

async function retryIn(
  tx: WriteTx,
  clock: Clock,
  crm: CrmOptions,
  input: RetryInput,
  preset: ReadonlyMap<string, Refusal>,
): Promise<RetryResult> {
  const now = input.now;
  const { rows, sources } = await lockedSelection(tx, { ...pick(input) }, now);
  const result: RetryResult = { applied: 0, duplicates: 0, refused: 0, waiting: 0, events: [] };
  // An event whose id was applied meanwhile (sent again under a new seq and retried before) is a duplicate.
  const applied = new Set<string>();
  for (const source of sources.keys()) {
    const ids = rows.flatMap((r) => (r.source === source && r.id !== null ? [r.id] : []));
    for (const row of await tx.intake.appliedIds(source, ids)) applied.add(`${source}\u0000${row.id}`);
  }
  const duplicate = (r: QuarantineRow) => r.id !== null && applied.has(`${r.source}\u0000${r.id}`);
  const tried = rows.filter((r) => !duplicate(r));
  const items: IsolatedItem[] = tried.map((r, key) => ({
    key,
    event: withoutId(JSON.parse(r.event) as CrmEvent),
    lane: `${r.source}\u0000${r.lane}`,
  }));
  const presetByKey = new Map<number, Refusal>();
  for (const [key, row] of tried.entries()) {
    const refusal = preset.get(keyOf(row));
    if (refusal) presetByKey.set(key, refusal);
  }
  let outcome: Awaited<ReturnType<typeof applyIsolated>>;
  try {
    outcome = await applyIsolated(tx, clock, crm, items, new Set(), presetByKey);
  } catch (error) {
    if (error instanceof RestartBatch) {
      const byRow = new Map<string, Refusal>();
      for (const [key, refusal] of error.refused) byRow.set(keyOf(tried[key]!), refusal);
      throw new RetryRestart(byRow);
    }
    throw error;
  }

  const removed: QuarantineRow[] = rows.filter(duplicate);
  for (const row of removed) result.events.push(outcomeOf(row, 'duplicate'));
  result.duplicates = removed.length;
  const appliedIds: IntakeIdRow[] = [];
  const again: QuarantineRow[] = [];
  const counts = new Map<string, { applied: number; duplicates: number }>();
  const bump = (source: string, field: 'applied' | 'duplicates') => {
    const c = counts.get(source) ?? { applied: 0, duplicates: 0 };
    c[field] += 1;
    counts.set(source, c);
  };
  for (const row of removed) bump(row.source, 'duplicates');
  for (const [key, row] of tried.entries()) {
    if (outcome.superseded.has(key)) {
      removed.push(row);
      result.events.push(outcomeOf(row, 'dropped', 'superseded_by_erasure'));
      continue;
    }
    if (outcome.applied.has(key)) {
      removed.push(row);
      result.applied += 1;
      bump(row.source, 'applied');
      if (row.id !== null) {
        const digest = eventDigest(JSON.parse(row.event) as CrmEvent);
        appliedIds.push({ source: row.source, id: row.id, digest, seq: row.seq, appliedAt: now });
      }
      result.events.push(outcomeOf(row, 'applied', 'applied'));
      continue;
    }
    const refusal = outcome.refused.get(key);
    if (refusal) {
      result.refused += 1;
      const field = refusal.field;
      again.push({
        ...row,
        code: refusal.code,
        field,
        message: refusal.message,
        attempts: row.attempts + 1,
        lastAt: now,
      });
      result.events.push(outcomeOf(row, 'refused', refusal.code));
      continue;
    }
    result.waiting += 1;
    result.events.push(outcomeOf(row, 'waiting'));
  }
  await tx.intake.putAppliedIds(appliedIds);
  await tx.intake.deleteQuarantine(removed);
  await tx.intake.putQuarantine(again);
  for (const [source, c] of counts) {
    const row = sources.get(source) as IntakeSourceRow;
    await tx.intake.putSource({
      ...row,
      applied: row.applied + c.applied,
      duplicates: row.duplicates + c.duplicates,
      updatedAt: now,
    });
  }
  result.events.sort((a, b) => (a.source === b.source ? a.seq - b.seq : a.source < b.source ? -1 : 1));
  return result;
}

function pick(selection: QuarantineSelection): QuarantineSelection {
  return {
    ...(selection.source === undefined ? {} : { source: selection.source }),
    ...(selection.lane === undefined ? {} : { lane: selection.lane }),
  };
}

export interface DropInput extends QuarantineSelection {
  seq?: number;
}

/** Removes quarantined events for good: one (source and seq), a lane (of a source or of all), or a source's. */
export async function dropQuarantine(tx: WriteTx, input: DropInput): Promise<QuarantineEventOutcome[]> {
  if (input.lane === undefined && input.source === undefined)
    throw new AdminError('invalid_argument', 'name a lane, a source, or a source and a seq', 'lane');
  if (input.seq !== undefined && input.source === undefined)
    throw new AdminError('invalid_argument', 'a seq names an event of one source: give the source too', 'source');
  const filter = { ...pick(input), ...(input.seq === undefined ? {} : { seq: input.seq }) };
  const rows = await tx.intake.quarantine(filter);
  await tx.intake.deleteQuarantine(rows);
  return rows.map((row) => outcomeOf(row, 'dropped'));
}
