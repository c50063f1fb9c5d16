import type { Clock } from '../../clock.js';
import { ApiError } from '../../errors/catalogue.js';
import type { Limits } from '../../limits.js';
import type { BudgetWindow, RateClass, Reservation } from '../access-control.js';
import type { Adjustment, ChargeStep, CounterStore, LockCheck, Window } from './counter-store.js';
import type { RequestBudget } from './redis-health.js';

// Rate limit and daily quota, both per integration (an old key in its grace period shares them with the
// new one, so a roll never doubles the allowance). Sync-class requests set aside their full `limit` up front,
// against the rate allowance and the day's quota alike, and give back what they do not use; a request that
// returns more than it set aside (the never-paged lists) is charged the difference afterwards. A request
// refused after its reservation keeps one item (or its read request): every authenticated request is paid.

const DAY_MS = 86_400_000;

/** A lock a reservation checks first, and the error it answers while the lock holds. */
export interface RefusingLock extends LockCheck {
  refusal(): Error;
}

/** Whole seconds, rounded up and at least 1, so a Retry-After is never shorter than the real wait. */
export const wholeSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/** The day `utcDay` last formatted: every request asks, and the answer changes once a day. */
let formatted = { start: Number.NaN, day: '' };

/** The UTC date of `ms` (the quota counter's key) and the ms until the next 00:00 UTC. */
export function utcDay(ms: number): { day: string; msToMidnight: number } {
  const start = Math.floor(ms / DAY_MS) * DAY_MS;
  if (formatted.start !== start) formatted = { start, day: new Date(start).toISOString().slice(0, 10) };
  return { day: formatted.day, msToMidnight: start + DAY_MS - ms };
}

type LimitsUsed = Pick<Limits, 'itemsPerMinute' | 'readRequestsPerMinute' | 'dailyItemQuota' | 'rateWindowSeconds'>;

export class RateLimits {
  private readonly items;
  private readonly reads;
  private readonly quota;

  constructor(
    private readonly counters: CounterStore,
    private readonly limits: LimitsUsed,
    private readonly clock: Clock,
  ) {
    this.items = counters.counter('items', limits.itemsPerMinute, limits.rateWindowSeconds);
    this.reads = counters.counter('read', limits.readRequestsPerMinute, limits.rateWindowSeconds);
    // Keyed by UTC date, so the day changes with the clock; the window only expires stale days.
    this.quota = counters.counter('quota', limits.dailyItemQuota, 2 * 86_400);
  }

  /**
   * Checks `locks` (the first that holds throws its refusal, nothing counted), then the day's quota, then the
   * rate allowance: one charge, so one Redis round trip.
   */
  async reserve(
    owner: string,
    rateClass: RateClass,
    items: number,
    countsTowardQuota: boolean,
    locks: readonly RefusingLock[] = [],
    budget?: RequestBudget,
  ): Promise<Reservation> {
    const { day, msToMidnight } = utcDay(this.clock.now());
    const quotaKey = `${owner}:${day}`;
    const sync = rateClass === 'sync';
    // A reservation larger than the whole allowance could never succeed: it sets aside the allowance instead.
    const reserved = sync ? Math.min(Math.max(0, Math.floor(items)), this.limits.itemsPerMinute) : 1;
    const counter = sync ? this.items : this.reads;
    // The quota first (a spent day answers quota_exceeded even when the minute is spent too). One atomic step
    // decides: the request passes while the day's count, reservations in flight included, is under the quota.
    const quotaReserved = countsTowardQuota && sync ? reserved : 0;
    const steps: ChargeStep[] = [];
    if (countsTowardQuota) steps.push({ counter: this.quota, key: quotaKey, points: quotaReserved, rule: 'under' });
    steps.push({ counter, key: owner, points: reserved, rule: reserved > 0 ? 'fits' : 'read' });
    const charged = await this.counters.charge(locks, this.clock.now(), steps, budget);
    if (!charged.ok) {
      if ('lock' in charged) throw (locks[charged.lock] as RefusingLock).refusal();
      if (steps[charged.step]?.counter === this.quota) {
        throw new ApiError('quota_exceeded', { retryAfter: wholeSeconds(msToMidnight) });
      }
      throw new ApiError('rate_limited', { retryAfter: wholeSeconds(charged.msBeforeNext) });
    }
    const { on } = charged;
    const minute = charged.windows[steps.length - 1] as Window;
    const today = countsTowardQuota ? (charged.windows[0] as Window) : undefined;
    const reservedAt = performance.now();
    // What the first settle or fail kept, against what was set aside (later calls change nothing).
    let kept: { items: number; quota: number } | undefined;
    /** Gives back (or charges) the difference between what was set aside and what is kept, without waiting. */
    const finish = (keptItems: number, quotaItems: number) => {
      if (kept) return kept;
      kept = { items: sync ? keptItems - reserved : 0, quota: countsTowardQuota ? quotaItems - quotaReserved : 0 };
      const changes: Adjustment[] = [];
      if (kept.items !== 0) changes.push({ counter, key: owner, points: kept.items, lease: minute.lease });
      if (kept.quota !== 0)
        changes.push({ counter: this.quota, key: quotaKey, points: kept.quota, lease: today?.lease });
      if (changes.length > 0) this.counters.adjust(changes, on, budget);
      return kept;
    };
    return {
      settle: async (used: number) => {
        const usedItems = Math.max(0, Math.floor(used));
        const change = finish(usedItems, usedItems);
        if (!sync) return [];
        return this.budget(
          { window: minute, since: reservedAt, change: change.items },
          today && { consumed: today.consumed + change.quota },
        );
      },
      fail: async () => {
        finish(Math.min(1, reserved), 0);
      },
    };
  }

  /**
   * The key's item budgets once a request's own items are settled, from what its charge found (the rate window
   * always, the day when the endpoint counts toward the quota): the counters as the charge left them, reservations
   * of requests then in flight included, with this request's give-back or extra charge applied. So they cost no
   * Redis round trip of their own, and come from wherever the charge counted (Redis, or this process's memory
   * while Redis is away).
   */
  private budget(
    minute: { window: Window; since: number; change: number },
    today: { consumed: number } | undefined,
  ): BudgetWindow[] {
    const { msToMidnight } = utcDay(this.clock.now());
    const windowSeconds = this.limits.rateWindowSeconds;
    // The rate windows run in real time: the window the charge saw may have ended since, and then the kept
    // items went to a window that ended, and the next request starts a full one (with only an extra charge).
    const msLeft =
      minute.window.msBeforeNext === null ? null : minute.window.msBeforeNext - (performance.now() - minute.since);
    const open = msLeft !== null && msLeft > 0;
    const consumed = open ? minute.window.consumed + minute.change : Math.max(0, minute.change);
    const budgets: BudgetWindow[] = [
      {
        policy: 'items-minute',
        quota: this.limits.itemsPerMinute,
        windowSeconds,
        remaining: Math.max(0, this.limits.itemsPerMinute - Math.max(0, consumed)),
        // No window open: the next request starts a full one.
        resetSeconds: open ? wholeSeconds(msLeft) : windowSeconds,
      },
    ];
    if (today) {
      budgets.push({
        policy: 'items-day',
        quota: this.limits.dailyItemQuota,
        windowSeconds: DAY_MS / 1000,
        remaining: Math.max(0, this.limits.dailyItemQuota - Math.max(0, today.consumed)),
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
