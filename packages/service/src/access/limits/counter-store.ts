import type { RequestBudget } from './redis-health.js';

// The counters and locks every limit is made of, whichever store keeps them (create-counter-store.ts).

/** Where a take was counted, so its give-back goes to the same place. */
export type CountedOn = 'memory' | 'redis';

// Every operation that may wait on Redis takes the request's budget (redis-health.ts), when it has one.
export interface Counter {
  /** Adds `points`; the total in the current window (may exceed the limit: the caller decides). */
  add(key: string, points: number, budget?: RequestBudget): Promise<{ consumed: number; msBeforeNext: number }>;
  /** Takes `points` if the total stays within the counter's limit, else refuses and keeps nothing. */
  take(key: string, points: number, budget?: RequestBudget): Promise<Taken>;
  /**
   * Takes `points` if the window held less than the limit before them (the total may then pass it), else
   * refuses and keeps nothing. One atomic add decides, so two racing takers never both pass the edge.
   */
  takeWhileUnder(key: string, points: number, budget?: RequestBudget): Promise<Taken>;
  /** Gives back points taken earlier in the window (never below zero), where they were taken. */
  giveBack(key: string, points: number, on: CountedOn, budget?: RequestBudget): Promise<void>;
  /** What the window holds now (0 when empty). */
  peek(key: string, budget?: RequestBudget): Promise<number>;
  /** What the window holds now and the ms until it ends (`msBeforeNext` null when no window is open). */
  window(key: string, budget?: RequestBudget): Promise<{ consumed: number; msBeforeNext: number | null }>;
  /** Forgets the key's window. */
  reset(key: string, budget?: RequestBudget): Promise<void>;
}

/** A take that passed says where it was counted and what the window then held (its total and ms left). */
export type Taken =
  | { ok: true; on: CountedOn; consumed: number; msBeforeNext: number }
  | { ok: false; msBeforeNext: number };

/** What a window holds: its total (0 when empty) and the ms until it ends (null when none is open). */
export interface Window {
  consumed: number;
  msBeforeNext: number | null;
  /** The lease (window) a charge served from leases took from: its adjustments go back there. */
  lease?: number;
}

/** A lock a charge checks first: it refuses the charge while the clock is before the lock's end. */
export interface LockCheck {
  locks: Locks;
  key: string;
}

/**
 * A counter's part in a charge: `fits` takes as `Counter.take`, `under` as `Counter.takeWhileUnder`, `read`
 * takes nothing and only reports the window.
 */
export interface ChargeStep {
  counter: Counter;
  key: string;
  points: number;
  rule: 'fits' | 'under' | 'read';
}

/** A charge passed (each step's window after it), or stopped by a lock or a step, with nothing kept. */
export type Charged =
  | { ok: true; on: CountedOn; windows: Window[] }
  | { ok: false; lock: number }
  | { ok: false; step: number; msBeforeNext: number };

/** Points given back (negative) or added after a charge, counted where the charge was. */
export interface Adjustment {
  counter: Counter;
  key: string;
  points: number;
  /** The charge's `Window.lease` of this counter, when it was served from leases. */
  lease?: number | undefined;
}

export interface Locks {
  /** Locks `key` until `untilMs` (on the injected clock); storage expires it after `ttlMs` of real time. */
  lock(key: string, untilMs: number, ttlMs: number, budget?: RequestBudget): Promise<void>;
  /** The clock time the key is locked until, or null. */
  lockedUntil(key: string, budget?: RequestBudget): Promise<number | null>;
  /** Every lock that holds at clock time `now`, with its end (for the operators' list; not on a hot path). */
  held(now: number): Promise<{ key: string; untilMs: number }[]>;
}

export interface CounterStore {
  counter(name: string, points: number, durationSeconds: number): Counter;
  locks(name: string): Locks;
  /** `memory`, or `redis` (with its memory fallback). */
  readonly kind: 'memory' | 'redis';
  /**
   * Checks `locks` at clock time `now`, then takes `steps` in order, all or nothing: the first lock that holds or
   * step that refuses stops the charge. One Redis round trip (one script) while Redis is up.
   */
  charge(
    locks: readonly LockCheck[],
    now: number,
    steps: readonly ChargeStep[],
    budget?: RequestBudget,
  ): Promise<Charged>;
  /**
   * Gives back or adds points where a charge counted them (`on`), without waiting: one Redis command sent,
   * whose failure the health handles. Never rejects.
   */
  adjust(changes: readonly Adjustment[], on: CountedOn, budget?: RequestBudget): void;
  /** True while Redis is in use (always false without Redis). */
  readonly redisUp: boolean;
  /** True while this process holds a live mirror of the locks on Redis (lock-mirror.ts). */
  readonly locksMirrored: boolean;
  /** Stops the Redis probe (before the client is closed). */
  close(): void;
}

/**
 * When a take keeps its points, from the window's total before and after adding them: `fits` stays within
 * the limit (Counter.take), `under` found the window below it (Counter.takeWhileUnder). One rule for the
 * memory and the Redis operations alike.
 */
export const keeps = (limit: number) => ({
  fits: (_before: number, after: number) => after <= limit,
  under: (before: number) => before < limit,
});

/** A counter operation's take, as `Counter.take` answers it: where it was counted when it passed. */
export const takenOn =
  (where: CountedOn) =>
  (taken: { ok: true; consumed: number; msBeforeNext: number } | { ok: false; msBeforeNext: number }): Taken =>
    taken.ok ? { ...taken, on: where } : taken;
