import type { Clock } from '../../clock.js';
import type { Limits } from '../../config.js';
import { ApiError } from '../../errors/catalogue.js';
import type { BudgetWindow, RateClass, Reservation } from '../access-control.js';
import type { CountedOn, CounterStore } from './counters.js';

// Rate limit and daily quota, both per integration (an old key in its grace period shares them with the
// new one, so a roll never doubles the allowance). Sync-class requests set aside their full `limit` up front,
// against the rate allowance and the day's quota alike, and give back what they do not use; a request that
// returns more than it set aside (the never-paged lists) is charged the difference afterwards. A request
// refused after its reservation keeps one item (or its read request): every authenticated request is paid.

const DAY_MS = 86_400_000;

/** Whole seconds, rounded up and at least 1, so a Retry-After is never shorter than the real wait. */
export const wholeSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/** The UTC date of `ms` (the quota counter's key) and the ms until the next 00:00 UTC. */
export function utcDay(ms: number): { day: string; msToMidnight: number } {
  const start = Math.floor(ms / DAY_MS) * DAY_MS;
  return { day: new Date(start).toISOString().slice(0, 10), msToMidnight: start + DAY_MS - ms };
}

type LimitsUsed = Pick<Limits, 'itemsPerMinute' | 'readRequestsPerMinute' | 'dailyItemQuota' | 'rateWindowSeconds'>;

export class RateLimits {
  private readonly items;
  private readonly reads;
  private readonly quota;

  constructor(
    counters: CounterStore,
    private readonly limits: LimitsUsed,
    private readonly clock: Clock,
  ) {
    this.items = counters.counter('items', limits.itemsPerMinute, limits.rateWindowSeconds);
    this.reads = counters.counter('read', limits.readRequestsPerMinute, limits.rateWindowSeconds);
    // Keyed by UTC date, so the day changes with the clock; the window only expires stale days.
    this.quota = counters.counter('quota', limits.dailyItemQuota, 2 * 86_400);
  }

  async reserve(owner: string, rateClass: RateClass, items: number, countsTowardQuota: boolean): Promise<Reservation> {
    const { day, msToMidnight } = utcDay(this.clock.now());
    const quotaKey = `${owner}:${day}`;
    const sync = rateClass === 'sync';
    // A reservation larger than the whole allowance could never succeed: it sets aside the allowance instead.
    const reserved = sync ? Math.min(Math.max(0, Math.floor(items)), this.limits.itemsPerMinute) : 1;
    const counter = sync ? this.items : this.reads;
    // The quota first (a spent day answers quota_exceeded even when the minute is spent too). One atomic add
    // decides: the request passes while the day's count, reservations in flight included, is under the quota.
    const quotaReserved = countsTowardQuota && sync ? reserved : 0;
    let quotaOn: CountedOn = 'memory';
    if (countsTowardQuota) {
      const taken = await this.quota.takeWhileUnder(quotaKey, quotaReserved);
      if (!taken.ok) throw new ApiError('quota_exceeded', undefined, wholeSeconds(msToMidnight));
      quotaOn = taken.on;
    }
    let rateOn: CountedOn = 'memory';
    if (reserved > 0) {
      const taken = await counter.take(owner, reserved);
      if (!taken.ok) {
        if (countsTowardQuota) await this.quota.giveBack(quotaKey, quotaReserved, quotaOn);
        throw new ApiError('rate_limited', undefined, wholeSeconds(taken.msBeforeNext));
      }
      rateOn = taken.on;
    }
    let settled = false;
    const finish = async (keptItems: number, quotaItems: number) => {
      if (settled) return;
      settled = true;
      if (sync) {
        if (keptItems < reserved) await counter.giveBack(owner, reserved - keptItems, rateOn);
        else if (keptItems > reserved) await counter.add(owner, keptItems - reserved);
      }
      if (!countsTowardQuota) return;
      if (quotaItems < quotaReserved) await this.quota.giveBack(quotaKey, quotaReserved - quotaItems, quotaOn);
      else if (quotaItems > quotaReserved) await this.quota.add(quotaKey, quotaItems - quotaReserved);
    };
    return {
      settle: async (used: number) => {
        const usedItems = Math.max(0, Math.floor(used));
        await finish(usedItems, usedItems);
        return sync ? this.budget(owner, countsTowardQuota) : [];
      },
      fail: () => finish(Math.min(1, reserved), 0),
    };
  }

  /**
   * The key's item budgets as the counters hold them now: the rate window always, the day when the endpoint
   * counts toward the quota. Read from wherever the counters are read (Redis, or this process's memory while
   * Redis is away), after the request's own settlement, so they include its real item count and the
   * reservations of requests still in flight.
   */
  private async budget(owner: string, withDay: boolean): Promise<BudgetWindow[]> {
    const { day, msToMidnight } = utcDay(this.clock.now());
    const windowSeconds = this.limits.rateWindowSeconds;
    const [minute, today] = await Promise.all([
      this.items.window(owner),
      withDay ? this.quota.peek(`${owner}:${day}`) : Promise.resolve(0),
    ]);
    const budgets: BudgetWindow[] = [
      {
        policy: 'items-minute',
        quota: this.limits.itemsPerMinute,
        windowSeconds,
        remaining: Math.max(0, this.limits.itemsPerMinute - minute.consumed),
        // No window open: the next request starts a full one.
        resetSeconds: minute.msBeforeNext === null ? windowSeconds : wholeSeconds(minute.msBeforeNext),
      },
    ];
    if (withDay) {
      budgets.push({
        policy: 'items-day',
        quota: this.limits.dailyItemQuota,
        windowSeconds: DAY_MS / 1000,
        remaining: Math.max(0, this.limits.dailyItemQuota - today),
        resetSeconds: wholeSeconds(msToMidnight),
      });
    }
    return budgets;
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
