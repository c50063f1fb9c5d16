import type { Clock } from '../../clock.js';
import type { IntakeIdRow, Store } from '../../store/store.js';
import { batchKeys } from '../events/batch-keys.js';
import { CachedTx } from '../events/cached-tx.js';
import { type CrmOptions, DEFAULT_CRM_OPTIONS, WriteContext } from '../events/context.js';
import { applyEvent } from '../events/crm.js';
import type { CrmEvent } from '../events/events.js';
import { WriteError } from '../events/write-error.js';
import { eventDigest, withoutId } from './event-digest.js';

// `crm-export ingest` of events that carry ids: a file or a stream has no seq, so ids alone tell what
// was applied. A batch stays all or nothing, as ingest always was: an event the write side refuses, or an
// id applied before with other content, rolls the batch back and names the event.

export interface IngestBatchInput {
  /** The source the ids belong to (`ingest --source`, default `ingest`). */
  source: string;
  /** Events in stored form, checked (`checkEvent`, then `normaliseEvent(stripContent(...))`). */
  events: readonly CrmEvent[];
}

export interface IngestBatchResult {
  applied: number;
  /** Events whose id was applied before with the same content: skipped. */
  duplicates: number;
}

/**
 * Applies one ingest batch in one transaction with the record of its ids: an event whose id was applied
 * before (same content) is skipped as a duplicate; other content under an applied id is refused
 * (`WriteError` naming its index), like a refusal of the write side. The source's row is locked, so two
 * ingests of one file never apply an event twice.
 */
export async function applyIngestBatch(
  store: Store,
  clock: Clock,
  input: IngestBatchInput,
  options: { crm?: Partial<CrmOptions> } = {},
): Promise<IngestBatchResult> {
  const crm = { ...DEFAULT_CRM_OPTIONS, ...options.crm };
  const { source, events } = input;
  const digests = events.map((event) => (event.id === undefined ? undefined : eventDigest(event)));
  const now = clock.now();
  return store.write(async (tx) => {
    const before = await tx.intake.lockSource(source, now);
    const ids = [...new Set(events.flatMap((event) => (event.id === undefined ? [] : [event.id])))];
    const known = new Map((await tx.intake.appliedIds(source, ids)).map((row) => [row.id, row.digest]));
    const run: { index: number; event: CrmEvent }[] = [];
    let duplicates = 0;
    for (const [index, event] of events.entries()) {
      const digest = digests[index];
      if (event.id !== undefined && digest !== undefined) {
        const applied = known.get(event.id);
        if (applied === digest) {
          duplicates += 1;
          continue;
        }
        if (applied !== undefined)
          throw new WriteError(`id ${event.id} was applied before with other content (id_conflict)`, index);
        known.set(event.id, digest);
      }
      run.push({ index, event });
    }
    const cache = new CachedTx(tx, { deferWrites: true });
    const ctx = new WriteContext(cache, clock, crm);
    await cache.prefetch(() => batchKeys(run.map((r) => r.event)));
    for (const { index, event } of run) {
      try {
        await applyEvent(ctx, withoutId(event));
      } catch (error) {
        if (!(error instanceof WriteError)) throw error;
        throw new WriteError(error.message, index);
      }
    }
    await cache.flush();
    const applied: IntakeIdRow[] = run.flatMap(({ index, event }) =>
      event.id === undefined
        ? []
        : [{ source, id: event.id, digest: digests[index] as string, seq: null, appliedAt: now }],
    );
    await tx.intake.putAppliedIds(applied);
    const last = run[run.length - 1]?.event;
    await tx.intake.putSource({
      ...before,
      lastEventAt: last ? Date.parse(last.at) : before.lastEventAt,
      applied: before.applied + run.length,
      duplicates: before.duplicates + duplicates,
      updatedAt: now,
    });
    return { applied: run.length, duplicates };
  });
}
