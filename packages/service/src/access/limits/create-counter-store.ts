import type { Redis } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterRedis } from 'rate-limiter-flexible';
import { MemoryTable } from './memory-table.js';
import { type AwayReason, type HealthLogger, RedisHealth, type RequestBudget } from './redis-health.js';
import { limitScripts, type ScriptAnswer, type ScriptStep } from './redis-scripts.js';

// Where counters and locks live: process memory (the embedded default) or Redis, shared by every API
// process. With Redis every counter keeps a memory twin and every lock a memory copy; one RedisHealth per
// process decides, for all of them at once, whether Redis is used or the memory side is (docs/limits.md,
// "When Redis fails"). A Redis failure therefore degrades to per-process limits, never to a failed request.

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
}

export interface Locks {
  /** Locks `key` until `untilMs` (on the injected clock); storage expires it after `ttlMs` of real time. */
  lock(key: string, untilMs: number, ttlMs: number, budget?: RequestBudget): Promise<void>;
  /** The clock time the key is locked until, or null. */
  lockedUntil(key: string, budget?: RequestBudget): Promise<number | null>;
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
  /** Stops the Redis probe (before the client is closed). */
  close(): void;
}

export interface CounterStoreOptions {
  redis?: Redis | undefined;
  prefix?: string;
  /** Longest a request waits on Redis in all (default 250 ms). */
  budgetMs?: number;
  /** Interval of the probe that brings Redis back (default 1000 ms). */
  probeMs?: number;
  logger?: HealthLogger | undefined;
  /** Called each time Redis goes away (metrics). */
  onRedisAway?: ((reason: AwayReason) => void) | undefined;
}

export function createCounterStore(options: CounterStoreOptions): CounterStore {
  const prefix = options.prefix ?? 'crmx';
  const redis = options.redis;
  // What the store made each counter and lock of, for the charges that use several at once.
  const counterParts = new WeakMap<Counter, CounterParts>();
  const lockParts = new WeakMap<Locks, LockParts>();
  const partsOf = <K extends object, V>(map: WeakMap<K, V>, of: K): V => {
    const parts = map.get(of);
    if (!parts) throw new Error('a charge may only use counters and locks of its own store');
    return parts;
  };
  if (!redis) {
    return {
      kind: 'memory',
      // Each counter has windows of its own, so its name needs no place in their keys.
      counter(_name, points, duration) {
        const memory = memoryOps(new MemoryWindows(duration), points);
        const counter = memoryCounter(memory);
        counterParts.set(counter, { memory, key: (key) => key, limit: points, seconds: duration });
        return counter;
      },
      locks() {
        const table = new LockTable();
        const locks = memoryLocks(table);
        lockParts.set(locks, { local: table, key: (key) => key });
        return locks;
      },
      charge: async (locks, now, steps) => {
        const lockChecks = locks.map((l) => ({ local: partsOf(lockParts, l.locks).local, key: l.key }));
        const counted = steps.map((s) => ({ memory: partsOf(counterParts, s.counter).memory, ...s }));
        return chargeInMemory(lockChecks, now, counted);
      },
      adjust: (changes) =>
        adjustInMemory(changes.map((c) => ({ memory: partsOf(counterParts, c.counter).memory, ...c }))),
      redisUp: false,
      close: () => undefined,
    };
  }
  const health = new RedisHealth(redis, {
    budgetMs: options.budgetMs ?? 250,
    probeMs: options.probeMs ?? 1000,
    probeKey: `${prefix}:health`,
    logger: options.logger,
    onAway: options.onRedisAway,
  });
  const scripts = limitScripts(redis);
  return {
    kind: 'redis',
    counter(name, points, duration) {
      const keyPrefix = `${prefix}:${name}`;
      const memory = memoryOps(new MemoryWindows(duration), points);
      // No insurance limiter: the fallback is the health's decision, so every counter switches together.
      const shared = new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration });
      const counter = redisCounter(redisOps(shared, points), memory, health);
      // rate-limiter-flexible's key for `key`: the scripts count on the same keys.
      counterParts.set(counter, { memory, key: (key) => `${keyPrefix}:${key}`, limit: points, seconds: duration });
      return counter;
    },
    locks(name) {
      const lockPrefix = `${prefix}:lock:${name}`;
      const local = new LockTable();
      const locks = redisLocks(redis, lockPrefix, local, health);
      lockParts.set(locks, { local, key: (key) => `${lockPrefix}:${key}` });
      return locks;
    },
    async charge(locks, now, steps, budget) {
      const lockers = locks.map((l) => ({ ...partsOf(lockParts, l.locks), id: l.key }));
      const counted = steps.map((s) => ({ ...s, ...partsOf(counterParts, s.counter), id: s.key }));
      const inMemory = () =>
        chargeInMemory(
          lockers.map((l) => ({ local: l.local, key: l.id })),
          now,
          counted.map((s) => ({ ...s, key: s.id })),
        );
      // A lock this process knows (set here, maybe while Redis was away) holds without asking Redis; Redis is
      // still asked about the locks before it, which come first.
      let held = -1;
      for (let i = 0; i < lockers.length && held < 0; i++) {
        const locker = lockers[i] as (typeof lockers)[number];
        if (isHeld(locker.local.lockedUntil(locker.id), now)) held = i;
      }
      if (held === 0) return { ok: false, lock: 0 };
      const checked = held < 0 ? lockers : lockers.slice(0, held);
      const lockKeys = checked.map((l) => l.key(l.id));
      const scriptSteps: ScriptStep[] =
        held < 0
          ? counted.map((s) => ({
              key: s.key(s.id),
              rule: s.rule,
              points: s.points,
              limit: s.limit,
              seconds: s.seconds,
            }))
          : [];
      const charged = await health.run(
        async () => fromScript(await scripts.charge(lockKeys, now, scriptSteps)),
        async (): Promise<Charged> => (held < 0 ? inMemory() : { ok: true, on: 'memory', windows: [] }),
        budget,
      );
      if (held < 0 || !charged.ok) return charged;
      return { ok: false, lock: held };
    },
    adjust(changes, on, budget) {
      const inMemory = changes.map((c) => ({ ...c, memory: partsOf(counterParts, c.counter).memory }));
      if (on === 'memory') return adjustInMemory(inMemory);
      const shared = changes.map((c) => {
        const parts = partsOf(counterParts, c.counter);
        return { key: parts.key(c.key), points: c.points, seconds: parts.seconds };
      });
      // While Redis is away, points given back are dropped (Redis keeps them until its window ends) and points
      // added are counted in memory, as a counter's own giveBack and add do.
      health.send(
        () => scripts.adjust(shared),
        async () => adjustInMemory(inMemory.filter((c) => c.points > 0)),
        budget,
      );
    },
    get redisUp() {
      return health.up;
    },
    close: () => health.close(),
  };
}

/** A counter's limit and window, its key on Redis and its memory twin. */
interface CounterParts {
  memory: MemoryOps;
  key(key: string): string;
  limit: number;
  seconds: number;
}

/** A lock store's memory table (the store itself without Redis) and its key on Redis. */
interface LockParts {
  local: LockTable;
  key(key: string): string;
}

const isHeld = (until: number | null, now: number): boolean => until !== null && now < until;

function fromScript(answer: ScriptAnswer): Charged {
  if (answer.kind === 'lock') return { ok: false, lock: answer.index };
  if (answer.kind === 'refused') return { ok: false, step: answer.index, msBeforeNext: answer.msBeforeNext };
  return {
    ok: true,
    on: 'redis',
    windows: answer.windows.map((w) => ({
      consumed: Math.max(w.consumed, 0),
      msBeforeNext: w.pttl < 0 ? null : w.pttl,
    })),
  };
}

/** The charge on this process's memory: the same checks and takes, one after another. */
function chargeInMemory(
  locks: readonly { local: LockTable; key: string }[],
  now: number,
  steps: readonly { memory: MemoryOps; key: string; points: number; rule: ChargeStep['rule'] }[],
): Charged {
  for (const [i, lock] of locks.entries()) {
    if (isHeld(lock.local.lockedUntil(lock.key), now)) return { ok: false, lock: i };
  }
  const windows: Window[] = [];
  for (const [i, step] of steps.entries()) {
    if (step.rule === 'read') {
      windows.push(step.memory.window(step.key));
      continue;
    }
    const taken =
      step.rule === 'fits'
        ? step.memory.take(step.key, step.points)
        : step.memory.takeWhileUnder(step.key, step.points);
    if (!taken.ok) {
      // Nothing is kept: the steps before it give their points back.
      for (const [j, before] of steps.entries()) {
        if (j < i && before.rule !== 'read') before.memory.giveBack(before.key, before.points);
      }
      return { ok: false, step: i, msBeforeNext: taken.msBeforeNext };
    }
    windows.push({ consumed: Math.max(taken.consumed, 0), msBeforeNext: taken.msBeforeNext });
  }
  return { ok: true, on: 'memory', windows };
}

function adjustInMemory(changes: readonly { memory: MemoryOps; key: string; points: number }[]): void {
  for (const c of changes) {
    if (c.points < 0) c.memory.giveBack(c.key, -c.points);
    else c.memory.add(c.key, c.points);
  }
}

/**
 * Fixed windows of one counter in this process's memory, as rate-limiter-flexible's memory limiter keeps
 * them (a window opens with the first points and lasts `seconds` of real time), but without a promise per
 * operation: every request's charge takes several, and those promises were a large share of a cached page
 * (docs/performance.md). Ended windows are dropped when read, and swept as the map doubles; the map is
 * bounded in bytes (memory-table.ts).
 */
class MemoryWindows {
  private readonly open = new MemoryTable<{ points: number; endsAt: number }>((window, now) => window.endsAt <= now);
  private sweepAt = 1024;

  constructor(private readonly seconds: number) {}

  /** Adds `points` (negative to give back) to the key's window, opening one when none is open. */
  add(key: string, points: number): { consumed: number; msBeforeNext: number } {
    const now = Date.now();
    let window = this.open.get(key);
    if (!window || window.endsAt <= now) {
      window = { points: 0, endsAt: now + this.seconds * 1000 };
      this.open.set(key, window);
      if (this.open.size >= this.sweepAt) this.sweep(now);
    }
    window.points += points;
    return { consumed: window.points, msBeforeNext: window.endsAt - now };
  }

  /** The key's open window, if any. */
  get(key: string): { consumed: number; msBeforeNext: number } | undefined {
    const window = this.open.get(key);
    const now = Date.now();
    if (!window || window.endsAt <= now) return undefined;
    return { consumed: window.points, msBeforeNext: window.endsAt - now };
  }

  delete(key: string): void {
    this.open.delete(key);
  }

  private sweep(now: number): void {
    this.open.sweep(now);
    this.sweepAt = Math.max(1024, 2 * this.open.size);
  }
}

/**
 * When a take keeps its points, from the window's total before and after adding them: `fits` stays within
 * the limit (Counter.take), `under` found the window below it (Counter.takeWhileUnder). One rule for the
 * memory and the Redis operations alike.
 */
const keeps = (limit: number) => ({
  fits: (_before: number, after: number) => after <= limit,
  under: (before: number) => before < limit,
});

/** The counter operations over memory windows, synchronous; every one is at most two adds. */
function memoryOps(windows: MemoryWindows, limit: number) {
  const rule = keeps(limit);
  const giveBack = (key: string, points: number) => {
    if (points <= 0) return;
    const { consumed } = windows.add(key, -points);
    // The window may have ended between take and give-back: a new window must not start in credit.
    if (consumed < 0) windows.add(key, -consumed);
  };
  const takeIf = (key: string, points: number, fits: (before: number, after: number) => boolean) => {
    const { consumed, msBeforeNext } = windows.add(key, points);
    if (fits(consumed - points, consumed)) return { ok: true as const, consumed, msBeforeNext };
    giveBack(key, points);
    return { ok: false as const, msBeforeNext };
  };
  return {
    add: (key: string, points: number) => windows.add(key, points),
    giveBack,
    take: (key: string, points: number) => takeIf(key, points, rule.fits),
    takeWhileUnder: (key: string, points: number) => takeIf(key, points, rule.under),
    peek: (key: string) => Math.max(windows.get(key)?.consumed ?? 0, 0),
    window(key: string): Window {
      const open = windows.get(key);
      return open
        ? { consumed: Math.max(open.consumed, 0), msBeforeNext: open.msBeforeNext }
        : { consumed: 0, msBeforeNext: null };
    },
    reset: (key: string) => windows.delete(key),
  };
}

type MemoryOps = ReturnType<typeof memoryOps>;

/** The counter operations over the Redis limiter; every one is at most two atomic adds on it. */
function redisOps(limiter: RateLimiterAbstract, limit: number) {
  const rule = keeps(limit);
  const add = async (key: string, points: number) => {
    const res = await limiter.penalty(key, points);
    return { consumed: res.consumedPoints, msBeforeNext: res.msBeforeNext };
  };
  const giveBack = async (key: string, points: number) => {
    if (points <= 0) return;
    const res = await limiter.reward(key, points);
    // The window may have ended between take and give-back: a new window must not start in credit.
    if (res.consumedPoints < 0) await limiter.penalty(key, -res.consumedPoints);
  };
  /** Adds, then keeps the points only if `fits(total before, total after)`; a refusal gives them back. */
  const takeIf = async (key: string, points: number, fits: (before: number, after: number) => boolean) => {
    const { consumed, msBeforeNext } = await add(key, points);
    if (fits(consumed - points, consumed)) return { ok: true as const, consumed, msBeforeNext };
    await giveBack(key, points);
    return { ok: false as const, msBeforeNext };
  };
  return {
    add,
    giveBack,
    take: (key: string, points: number) => takeIf(key, points, rule.fits),
    takeWhileUnder: (key: string, points: number) => takeIf(key, points, rule.under),
    async peek(key: string) {
      const res = await limiter.get(key);
      return res ? Math.max(res.consumedPoints, 0) : 0;
    },
    async window(key: string): Promise<Window> {
      const res = await limiter.get(key);
      if (!res) return { consumed: 0, msBeforeNext: null };
      return { consumed: Math.max(res.consumedPoints, 0), msBeforeNext: Math.max(res.msBeforeNext, 0) };
    },
    async reset(key: string) {
      await limiter.delete(key);
    },
  };
}

type RedisOps = ReturnType<typeof redisOps>;
type Took = ReturnType<MemoryOps['take']>;

const on =
  (where: CountedOn) =>
  (taken: Took): Taken =>
    taken.ok ? { ...taken, on: where } : taken;

function memoryCounter(m: MemoryOps): Counter {
  return {
    add: async (key, points) => m.add(key, points),
    take: async (key, points) => on('memory')(m.take(key, points)),
    takeWhileUnder: async (key, points) => on('memory')(m.takeWhileUnder(key, points)),
    giveBack: async (key, points) => m.giveBack(key, points),
    peek: async (key) => m.peek(key),
    window: async (key) => m.window(key),
    reset: async (key) => m.reset(key),
  };
}

function redisCounter(r: RedisOps, m: MemoryOps, health: RedisHealth): Counter {
  return {
    add: (key, points, budget) =>
      health.run(
        () => r.add(key, points),
        async () => m.add(key, points),
        budget,
      ),
    take: (key, points, budget) =>
      health.run(
        async () => on('redis')(await r.take(key, points)),
        async () => on('memory')(m.take(key, points)),
        budget,
      ),
    takeWhileUnder: (key, points, budget) =>
      health.run(
        async () => on('redis')(await r.takeWhileUnder(key, points)),
        async () => on('memory')(m.takeWhileUnder(key, points)),
        budget,
      ),
    async giveBack(key, points, where, budget) {
      // Taken in memory: given back there, even once Redis is back. Taken on Redis while it is away: the
      // give-back is dropped (Redis keeps those points until its window ends).
      if (where === 'memory') return m.giveBack(key, points);
      await health.run(
        () => r.giveBack(key, points),
        async () => undefined,
        budget,
      );
    },
    peek: (key, budget) =>
      health.run(
        () => r.peek(key),
        async () => m.peek(key),
        budget,
      ),
    window: (key, budget) =>
      health.run(
        () => r.window(key),
        async () => m.window(key),
        budget,
      ),
    reset: (key, budget) =>
      health.run(
        () => r.reset(key),
        async () => m.reset(key),
        budget,
      ),
  };
}

/** Locks in this process's memory: each holds until its clock time and is forgotten after its ttl. */
class LockTable {
  private readonly until = new MemoryTable<{ untilMs: number; expiresAt: number }>(
    (entry, now) => entry.expiresAt <= now,
  );

  lock(key: string, untilMs: number, ttlMs: number): void {
    this.until.set(key, { untilMs, expiresAt: Date.now() + ttlMs });
  }

  lockedUntil(key: string): number | null {
    const entry = this.until.get(key);
    if (!entry) return null;
    if (entry.expiresAt <= Date.now()) {
      this.until.delete(key);
      return null;
    }
    return entry.untilMs;
  }
}

function memoryLocks(table: LockTable): Locks {
  return {
    lock: async (key, untilMs, ttlMs) => table.lock(key, untilMs, ttlMs),
    lockedUntil: async (key) => table.lockedUntil(key),
  };
}

function redisLocks(redis: Redis, prefix: string, local: LockTable, health: RedisHealth): Locks {
  // Every lock is also kept in memory, so a lock this process set still holds here while Redis is away.
  return {
    async lock(key, untilMs, ttlMs, budget) {
      local.lock(key, untilMs, ttlMs);
      await health.run(
        async () => {
          await redis.set(`${prefix}:${key}`, String(untilMs), 'PX', Math.max(1, Math.ceil(ttlMs)));
        },
        async () => undefined,
        budget,
      );
    },
    async lockedUntil(key, budget) {
      const mine = local.lockedUntil(key);
      const value = await health.run(
        () => redis.get(`${prefix}:${key}`),
        async () => null,
        budget,
      );
      const shared = value === null ? null : Number(value);
      if (mine === null) return shared;
      return shared === null ? mine : Math.max(mine, shared);
    },
  };
}
