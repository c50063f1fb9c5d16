import type { Clock } from '../../clock.js';
import type { WriteTx } from '../../store/store.js';
import { batchKeys } from '../events/batch-keys.js';
import { CachedTx } from '../events/cached-tx.js';
import { type CrmOptions, WriteContext } from '../events/context.js';
import { applyEvent } from '../events/crm.js';
import type { CrmEvent } from '../events/events.js';
import { WriteError } from '../events/write-error.js';
import { type Refusal, refusalOf } from './lanes.js';

// Applying a batch's events so that a refused event undoes only its own effects, in one transaction.
//
// The write side buffers a batch's writes in a `CachedTx` and hands them to the store once, at the end. So
// the simplest correct isolation is to run again: the events go through a fresh cache; when one is
// refused, that cache (holding its half-done effects) is thrown away, the event is set aside with the
// later events of its lane, and the rest run again from the start in a new cache. Nothing of the failed
// run reached the tables, so the second run sees the state before the batch. Refusals are rare, so a
// batch runs once, or once more per refusal. A few reads of the write side do write the buffer early
// (a list query over moved entities, a record read back after it was written); when the failed run did,
// the transaction itself is rolled back (`RestartBatch`) and the caller runs it again with the refusals
// it learned, which are then set aside without being tried. A per-event savepoint would not do on
// PostgreSQL: rolling back to one releases the row locks taken after it, which the write side counts on.

/** One event to apply, in order. */
export interface IsolatedItem {
  /** The caller's key for the event (its index in the batch). */
  key: number;
  /** In stored form, without `id`. */
  event: CrmEvent;
  /** Its ordering lane (the caller scopes it, e.g. per source). */
  lane: string;
}

/**
 * An erasure never waits behind its lane: a person's data must leave the export when they ask, not once
 * an operator has dealt with an older event. Applied, it supersedes the refused and waiting events before
 * it in its lane (the caller drops them: they hold the erased data and could only be refused now).
 */
export const isErasure = (event: CrmEvent): boolean => event.type.endsWith('.erased');

export interface IsolatedOutcome {
  applied: Set<number>;
  refused: Map<number, Refusal>;
  /** Events not tried because their lane was blocked (before the batch, or by a refusal in it). */
  waiting: Set<number>;
  /** Refused or waiting events before an erasure of their lane that applied (`isErasure`). */
  superseded: Set<number>;
  /** Lanes in which an erasure applied: what was parked in them before is superseded too. */
  erased: Set<string>;
}

/** The transaction must be rolled back and run again with these refusals set aside untried. */
export class RestartBatch extends Error {
  override name = 'RestartBatch';
  constructor(readonly refused: ReadonlyMap<number, Refusal>) {
    super('a refused event had written part of the batch; the batch runs again without it');
  }
}

/** Members of `WriteTx` that change stored state. */
const WRITES = new Set<PropertyKey>([
  'putEntity',
  'deleteEntity',
  'putRecord',
  'removeRecord',
  'appendFeed',
  'purgeFeed',
  'applyWrites',
  'setMeta',
]);

/** `tx`, noting whether anything was written through it. */
function watched(tx: WriteTx): { tx: WriteTx; wrote: () => boolean } {
  let wrote = false;
  const proxy = new Proxy(tx, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (WRITES.has(prop)) wrote = true;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { tx: proxy, wrote: () => wrote };
}

/**
 * Applies the items in order inside the caller's transaction: an item the write side refuses is left out
 * with its refusal, later items of its lane wait, and every other item is applied. `blocked`: lanes
 * blocked before this batch. `preset`: refusals learned by a run that was rolled back (`RestartBatch`).
 */
export async function applyIsolated(
  tx: WriteTx,
  clock: Clock,
  options: CrmOptions,
  items: readonly IsolatedItem[],
  blocked: ReadonlySet<string>,
  preset: ReadonlyMap<number, Refusal> = new Map(),
): Promise<IsolatedOutcome> {
  const refused = new Map(preset);
  const lanes = new Set(blocked);
  for (const item of items) if (refused.has(item.key)) lanes.add(item.lane);
  for (;;) {
    const watch = watched(tx);
    const cache = new CachedTx(watch.tx, { deferWrites: true });
    const ctx = new WriteContext(cache, clock, options);
    const applied = new Set<number>();
    const waiting = new Set<number>();
    const stopped = new Set(lanes);
    const runnable = items.filter((item) => !refused.has(item.key) && !stopped.has(item.lane));
    await cache.prefetch(() => batchKeys(runnable.map((item) => item.event)));
    let failed = false;
    for (const item of items) {
      if (refused.has(item.key)) {
        stopped.add(item.lane);
        continue;
      }
      const erasure = isErasure(item.event);
      if (stopped.has(item.lane) && !erasure) {
        waiting.add(item.key);
        continue;
      }
      try {
        await applyEvent(ctx, item.event);
        applied.add(item.key);
        if (erasure) stopped.delete(item.lane);
      } catch (error) {
        if (!(error instanceof WriteError)) throw error;
        refused.set(item.key, refusalOf(item.event, error));
        lanes.add(item.lane);
        failed = true;
        break;
      }
    }
    if (!failed) {
      await cache.flush();
      return { applied, refused, waiting, ...supersededBy(items, applied, refused, waiting) };
    }
    if (watch.wrote()) throw new RestartBatch(refused);
  }
}

/** The events an applied erasure supersedes, and the lanes it cleared. */
function supersededBy(
  items: readonly IsolatedItem[],
  applied: ReadonlySet<number>,
  refused: Map<number, Refusal>,
  waiting: Set<number>,
): Pick<IsolatedOutcome, 'superseded' | 'erased'> {
  const superseded = new Set<number>();
  const erased = new Set<string>();
  const parked = new Map<string, number[]>();
  for (const item of items) {
    if (applied.has(item.key) && isErasure(item.event)) {
      erased.add(item.lane);
      for (const key of parked.get(item.lane) ?? []) superseded.add(key);
      parked.delete(item.lane);
    } else if (refused.has(item.key) || waiting.has(item.key)) {
      const keys = parked.get(item.lane) ?? [];
      keys.push(item.key);
      parked.set(item.lane, keys);
    }
  }
  for (const key of superseded) {
    refused.delete(key);
    waiting.delete(key);
  }
  return { superseded, erased };
}
