import type { Clock } from '../../clock.js';
import type { IntakeIdRow, IntakeSourceRow, QuarantineRow, Store, WriteTx } from '../../store/store.js';
import { type CrmOptions, DEFAULT_CRM_OPTIONS } from '../events/context.js';
import type { CrmEvent } from '../events/events.js';
import { checkEvent, normaliseEvent, stripContent } from '../events/parse-event.js';
import { eventDigest, withoutId } from './event-digest.js';
import { applyIsolated, type IsolatedItem, RestartBatch } from './isolated-apply.js';
import { laneOf, type Refusal } from './lanes.js';

// The intake's one write path: a batch of one source's events, each with its `seq` and perhaps an `id`,
// applied in one transaction together with the record of what was applied (docs/intake.md gives the
// protocol). The answer is given only once that transaction committed.

/** A source's name: what a producer calls itself. */
export const SOURCE_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** One event of a batch: its sequence number and the event as the producer sent it (with its `id`, if any). */
export interface IntakeEventInput {
  seq: number;
  event: unknown;
}

export interface IntakeBatchInput {
  source: string;
  /** The seq this batch follows; default the first event's seq - 1. */
  follows?: number;
  events: readonly IntakeEventInput[];
}

export type IntakeOutcome = 'applied' | 'duplicate' | 'quarantined' | 'rejected';

/** What came of one event, in the wire's words. */
export interface IntakeEventResult {
  seq: number;
  id?: string;
  outcome: IntakeOutcome;
  code?: string;
  field?: string;
}

export type IntakeBatchResult =
  | { ok: true; source: string; last_seq: number; results: IntakeEventResult[] }
  /** The batch does not follow what was applied: nothing was applied; resend from `last_seq`. */
  | { ok: false; code: 'sequence_gap'; source: string; last_seq: number };

/** A batch the caller should have refused before (the endpoint checks these and answers 400). */
export class IntakeInputError extends Error {
  override name = 'IntakeInputError';
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(`${param} ${message}`);
  }
}

/** The first thing wrong with a batch's envelope (not its events' fields), or undefined. */
export function checkIntakeBatch(batch: IntakeBatchInput): IntakeInputError | undefined {
  if (!SOURCE_PATTERN.test(batch.source))
    return new IntakeInputError(
      'source',
      'must be 1 to 64 of a-z, 0-9, ".", "_" and "-", starting with a letter or digit',
    );
  if (batch.follows !== undefined && !(Number.isSafeInteger(batch.follows) && batch.follows >= 0))
    return new IntakeInputError('follows', 'must be a whole number, 0 or more');
  let previous = batch.follows ?? 0;
  for (const [index, { seq }] of batch.events.entries()) {
    if (!Number.isSafeInteger(seq) || seq < 1)
      return new IntakeInputError(`events[${index}].seq`, 'must be a positive whole number');
    if (index > 0 && seq <= previous)
      return new IntakeInputError(`events[${index}].seq`, 'must be greater than the seq before it');
    if (index === 0 && batch.follows !== undefined && seq <= batch.follows)
      return new IntakeInputError(`events[${index}].seq`, 'must be greater than follows');
    previous = seq;
  }
  return undefined;
}

export interface IntakeOptions {
  crm?: Partial<CrmOptions>;
}

/** An event of the batch once read: in stored form with its id, or why it cannot be. */
type Parsed =
  | { ok: true; seq: number; id: string | undefined; event: CrmEvent; digest: string | undefined }
  | { ok: false; seq: number; id: string | undefined; field: string };

function parse(input: IntakeEventInput): Parsed {
  const raw = input.event as { id?: unknown } | null;
  const id = typeof raw?.id === 'string' ? raw.id : undefined;
  const checked = checkEvent(input.event);
  if (!checked.ok) return { ok: false, seq: input.seq, id, field: checked.field };
  const event = normaliseEvent(stripContent(checked.event));
  return { ok: true, seq: input.seq, id, event, digest: id === undefined ? undefined : eventDigest(event) };
}

/**
 * Applies one batch of a source (see docs/intake.md): a batch that does not follow the source's last seq
 * is refused whole (`sequence_gap`); events at or below it, and ids applied before, are duplicates; an
 * id applied before with other content is rejected (`id_conflict`); an event the write side refuses goes
 * to the quarantine with the later events of its lane (`waiting_behind`), and the others apply. The
 * events' effects, their ids, the quarantine and the source's position commit in one transaction, the
 * source's row locked for it, so batches of one source never interleave.
 */
export async function applyIntakeBatch(
  store: Store,
  clock: Clock,
  batch: IntakeBatchInput,
  options: IntakeOptions = {},
): Promise<IntakeBatchResult> {
  const wrong = checkIntakeBatch(batch);
  if (wrong) throw wrong;
  const crm = { ...DEFAULT_CRM_OPTIONS, ...options.crm };
  const parsed = batch.events.map(parse);
  const now = clock.now();
  let preset = new Map<number, Refusal>();
  for (;;) {
    try {
      return await store.write((tx) => applyInTransaction(tx, clock, crm, batch, parsed, now, preset));
    } catch (error) {
      if (!(error instanceof RestartBatch)) throw error;
      preset = new Map(error.refused);
    }
  }
}

async function applyInTransaction(
  tx: WriteTx,
  clock: Clock,
  crm: CrmOptions,
  batch: IntakeBatchInput,
  parsed: readonly Parsed[],
  now: number,
  preset: ReadonlyMap<number, Refusal>,
): Promise<IntakeBatchResult> {
  const { source } = batch;
  const before = await tx.intake.lockSource(source, now);
  const first = parsed[0]?.seq;
  const follows = batch.follows ?? (first === undefined ? before.lastSeq : first - 1);
  if (follows > before.lastSeq) return { ok: false, code: 'sequence_gap', source, last_seq: before.lastSeq };

  const fresh = parsed.filter((p) => p.seq > before.lastSeq);
  const ids = [...new Set(fresh.flatMap((p) => (p.id === undefined ? [] : [p.id])))];
  const blocked = new Set(await tx.intake.blockedLanes(source));
  // Ids applied before, and ids of events waiting in the quarantine (accepted, not applied yet).
  const known = new Map<string, string>();
  for (const row of await tx.intake.appliedIds(source, ids)) known.set(row.id, row.digest);
  if (ids.length > 0 && blocked.size > 0) {
    const wanted = new Set(ids);
    for (const row of await tx.intake.quarantine({ source })) {
      if (row.id !== null && wanted.has(row.id)) known.set(row.id, eventDigest(JSON.parse(row.event) as CrmEvent));
    }
  }

  const results: IntakeEventResult[] = parsed.map((p) => ({
    seq: p.seq,
    ...(p.id === undefined ? {} : { id: p.id }),
    outcome: 'duplicate',
  }));
  const reject = (index: number, code: string, field: string) => {
    results[index] = { ...results[index]!, outcome: 'rejected', code, field };
  };
  const items: IsolatedItem[] = [];
  for (const [index, p] of parsed.entries()) {
    if (p.seq <= before.lastSeq) continue;
    if (!p.ok) {
      reject(index, 'invalid_event', p.field);
      continue;
    }
    if (p.id !== undefined) {
      const digest = known.get(p.id);
      if (digest !== undefined) {
        if (digest !== p.digest) reject(index, 'id_conflict', 'id');
        continue;
      }
      known.set(p.id, p.digest as string);
    }
    items.push({ key: index, event: withoutId(p.event), lane: laneOf(p.event) });
  }

  const outcome = await applyIsolated(tx, clock, crm, items, blocked, preset);

  const appliedIds: IntakeIdRow[] = [];
  const quarantine: QuarantineRow[] = [];
  let lastEventAt = before.lastEventAt;
  const laneOfKey = new Map(items.map((item) => [item.key, item.lane]));
  for (const [index, p] of parsed.entries()) {
    if (!p.ok) continue;
    const lane = laneOfKey.get(index) as string;
    if (outcome.applied.has(index)) {
      results[index] = { ...results[index]!, outcome: 'applied' };
      lastEventAt = Date.parse(p.event.at);
      if (p.id !== undefined)
        appliedIds.push({ source, id: p.id, digest: p.digest as string, seq: p.seq, appliedAt: now });
      continue;
    }
    if (outcome.superseded.has(index)) {
      results[index] = { ...results[index]!, outcome: 'rejected', code: 'superseded_by_erasure' };
      continue;
    }
    const refusal = outcome.refused.get(index);
    const waits = outcome.waiting.has(index);
    if (!refusal && !waits) continue;
    const code = refusal?.code ?? 'waiting_behind';
    const field = refusal?.field ?? null;
    results[index] = { ...results[index]!, outcome: 'quarantined', code, ...(field === null ? {} : { field }) };
    quarantine.push({
      source,
      seq: p.seq,
      id: p.id ?? null,
      lane,
      type: p.event.type,
      event: JSON.stringify(p.event),
      code,
      field,
      message: refusal?.message ?? `waits behind an earlier event of lane ${lane}`,
      attempts: refusal ? 1 : 0,
      firstAt: now,
      lastAt: now,
    });
  }
  await tx.intake.putAppliedIds(appliedIds);
  // What earlier batches parked in a lane whose erasure applied now: it holds the erased data, and could
  // only be refused (the record is gone).
  for (const lane of outcome.erased) await tx.intake.deleteQuarantine(await tx.intake.quarantine({ source, lane }));
  await tx.intake.putQuarantine(quarantine);
  const count = (outcome: IntakeOutcome) =>
    results.filter((r) => r.outcome === outcome && r.seq > before.lastSeq).length;
  const duplicates = results.filter((r) => r.outcome === 'duplicate').length;
  const lastSeq = Math.max(before.lastSeq, parsed[parsed.length - 1]?.seq ?? 0);
  const after: IntakeSourceRow = {
    ...before,
    lastSeq,
    lastEventAt,
    applied: before.applied + count('applied'),
    duplicates: before.duplicates + duplicates,
    rejected: before.rejected + count('rejected'),
    quarantined: before.quarantined + count('quarantined'),
    updatedAt: now,
  };
  await tx.intake.putSource(after);
  return { ok: true, source, last_seq: lastSeq, results };
}
