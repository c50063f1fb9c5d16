import type { Clock } from '../../clock.js';
import type { Limits } from '../../config.js';
import { ApiError } from '../../errors/catalogue.js';
import type { RateClass, Reservation } from '../access-control.js';
import type { CounterStore } from './counters.js';

// Rate limit and daily quota, both per integration (an old key in its grace period shares them with the
// new one, so a roll never doubles the allowance). Sync-class requests set aside their full `limit` up front
// and give back what they do not use; the quota counts items actually returned, per UTC day of the clock.

const DAY_MS = 86_400_000;

/** Whole seconds, rounded up and at least 1, so a Retry-After is never shorter than the real wait. */
export const wholeSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/** The UTC date of `ms` (the quota counter's key) and the ms until the next 00:00 UTC. */
export function utcDay(ms: number): { day: string; msToMidnight: number } {
  const start = Math.floor(ms / DAY_MS) * DAY_MS;
  return { day: new Date(start).toISOString().slice(0, 10), msToMidnight: start + DAY_MS - ms };
}

type LimitsUsed = Pick<Limits, 'itemsPerMinute' | 'readRequestsPerMinute' | 'dailyItemQuota'>;

export class RateLimits {
  private readonly items;
  private readonly reads;
  private readonly quota;

  constructor(
    counters: CounterStore,
    private readonly limits: LimitsUsed,
    private readonly clock: Clock,
  ) {
    this.items = counters.counter('items', limits.itemsPerMinute, 60);
    this.reads = counters.counter('read', limits.readRequestsPerMinute, 60);
    // Keyed by UTC date, so the day changes with the clock; the window only expires stale days.
    this.quota = counters.counter('quota', limits.dailyItemQuota, 2 * 86_400);
  }

  async reserve(owner: string, rateClass: RateClass, items: number, countsTowardQuota: boolean): Promise<Reservation> {
    const { day, msToMidnight } = utcDay(this.clock.now());
    const quotaKey = `${owner}:${day}`;
    if (countsTowardQuota && (await this.quota.peek(quotaKey)) >= this.limits.dailyItemQuota) {
      throw new ApiError('quota_exceeded', undefined, wholeSeconds(msToMidnight));
    }
    // A reservation larger than the whole allowance could never succeed: it sets aside the allowance instead.
    const reserved = rateClass === 'sync' ? Math.min(Math.max(0, Math.floor(items)), this.limits.itemsPerMinute) : 1;
    const counter = rateClass === 'sync' ? this.items : this.reads;
    if (reserved > 0) {
      const taken = await counter.take(owner, reserved);
      if (!taken.ok) throw new ApiError('rate_limited', undefined, wholeSeconds(taken.msBeforeNext));
    }
    let settled = false;
    return {
      settle: async (used: number) => {
        if (settled) return;
        settled = true;
        const usedItems = Math.max(0, Math.floor(used));
        if (rateClass === 'sync') await counter.giveBack(owner, reserved - Math.min(usedItems, reserved));
        if (countsTowardQuota && usedItems > 0) await this.quota.add(quotaKey, usedItems);
      },
    };
  }

  /** Items and read requests counted this minute and items counted today (for `admin usage`). */
  async usage(owner: string): Promise<{ itemsThisMinute: number; readsThisMinute: number; quotaUsedToday: number }> {
    const { day } = utcDay(this.clock.now());
    return {
      itemsThisMinute: await this.items.peek(owner),
      readsThisMinute: await this.reads.peek(owner),
      quotaUsedToday: await this.quota.peek(`${owner}:${day}`),
    };
  }
}
