import type { Redis } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import { type AwayReason, type HealthLogger, RedisHealth } from './redis-health.js';

// Where counters and locks live: process memory (the embedded default) or Redis, shared by every API
// process. With Redis every counter keeps a memory twin and every lock a memory copy; one RedisHealth per
// process decides, for all of them at once, whether Redis is used or the memory side is (docs/limits.md,
// "When Redis fails"). A Redis failure therefore degrades to per-process limits, never to a failed request.

/** Where a take was counted, so its give-back goes to the same place. */
export type CountedOn = 'memory' | 'redis';

export interface Counter {
  /** Adds `points`; the total in the current window (may exceed the limit: the caller decides). */
  add(key: string, points: number): Promise<{ consumed: number; msBeforeNext: number }>;
  /** Takes `points` if the total stays within the counter's limit, else refuses and keeps nothing. */
  take(key: string, points: number): Promise<Taken>;
  /**
   * Takes `points` if the window held less than the limit before them (the total may then pass it), else
   * refuses and keeps nothing. One atomic add decides, so two racing takers never both pass the edge.
   */
  takeWhileUnder(key: string, points: number): Promise<Taken>;
  /** Gives back points taken earlier in the window (never below zero), where they were taken. */
  giveBack(key: string, points: number, on: CountedOn): Promise<void>;
  /** What the window holds now (0 when empty). */
  peek(key: string): Promise<number>;
  /** What the window holds now and the ms until it ends (`msBeforeNext` null when no window is open). */
  window(key: string): Promise<{ consumed: number; msBeforeNext: number | null }>;
  /** Forgets the key's window. */
  reset(key: string): Promise<void>;
}

export type Taken = { ok: true; on: CountedOn } | { ok: false; msBeforeNext: number };

export interface Locks {
  /** Locks `key` until `untilMs` (on the injected clock); storage expires it after `ttlMs` of real time. */
  lock(key: string, untilMs: number, ttlMs: number): Promise<void>;
  /** The clock time the key is locked until, or null. */
  lockedUntil(key: string): Promise<number | null>;
}

export interface CounterStore {
  counter(name: string, points: number, durationSeconds: number): Counter;
  locks(name: string): Locks;
  /** `memory`, or `redis` (with its memory fallback). */
  readonly kind: 'memory' | 'redis';
  /** Runs one request's work with its own Redis budget (no-op without Redis). */
  inRequest<T>(work: () => T): T;
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
  /** Interval of the PING that brings Redis back (default 1000 ms). */
  probeMs?: number;
  logger?: HealthLogger | undefined;
  /** Called each time Redis goes away (metrics). */
  onRedisAway?: ((reason: AwayReason) => void) | undefined;
}

export function createCounterStore(options: CounterStoreOptions): CounterStore {
  const prefix = options.prefix ?? 'crmx';
  const redis = options.redis;
  if (!redis) {
    return {
      kind: 'memory',
      counter: (name, points, duration) =>
        memoryCounter(ops(new RateLimiterMemory({ keyPrefix: `${prefix}:${name}`, points, duration }), points)),
      locks: () => memoryLocks(),
      inRequest: (work) => work(),
      redisUp: false,
      close: () => undefined,
    };
  }
  const health = new RedisHealth(redis, {
    budgetMs: options.budgetMs ?? 250,
    probeMs: options.probeMs ?? 1000,
    logger: options.logger,
    onAway: options.onRedisAway,
  });
  return {
    kind: 'redis',
    counter(name, points, duration) {
      const keyPrefix = `${prefix}:${name}`;
      const memory = new RateLimiterMemory({ keyPrefix, points, duration });
      // No insurance limiter: the fallback is the health's decision, so every counter switches together.
      const shared = new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration });
      return redisCounter(ops(shared, points), ops(memory, points), health);
    },
    locks(name) {
      return redisLocks(redis, `${prefix}:lock:${name}`, health);
    },
    inRequest: (work) => health.inRequest(work),
    get redisUp() {
      return health.up;
    },
    close: () => health.close(),
  };
}

/** The counter operations over one limiter; every one is at most two atomic adds on it. */
function ops(limiter: RateLimiterAbstract, limit: number) {
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
    if (fits(consumed - points, consumed)) return { ok: true as const };
    await giveBack(key, points);
    return { ok: false as const, msBeforeNext };
  };
  return {
    add,
    giveBack,
    take: (key: string, points: number) => takeIf(key, points, (_before, after) => after <= limit),
    takeWhileUnder: (key: string, points: number) => takeIf(key, points, (before) => before < limit),
    async peek(key: string) {
      const res = await limiter.get(key);
      return res ? Math.max(res.consumedPoints, 0) : 0;
    },
    async window(key: string) {
      const res = await limiter.get(key);
      if (!res) return { consumed: 0, msBeforeNext: null };
      return { consumed: Math.max(res.consumedPoints, 0), msBeforeNext: Math.max(res.msBeforeNext, 0) };
    },
    async reset(key: string) {
      await limiter.delete(key);
    },
  };
}

type Ops = ReturnType<typeof ops>;

const on =
  (where: CountedOn) =>
  (taken: { ok: true } | { ok: false; msBeforeNext: number }): Taken =>
    taken.ok ? { ok: true, on: where } : taken;

function memoryCounter(m: Ops): Counter {
  return {
    add: m.add,
    take: async (key, points) => on('memory')(await m.take(key, points)),
    takeWhileUnder: async (key, points) => on('memory')(await m.takeWhileUnder(key, points)),
    giveBack: (key, points) => m.giveBack(key, points),
    peek: m.peek,
    window: m.window,
    reset: m.reset,
  };
}

function redisCounter(r: Ops, m: Ops, health: RedisHealth): Counter {
  return {
    add: (key, points) =>
      health.run(
        () => r.add(key, points),
        () => m.add(key, points),
      ),
    take: (key, points) =>
      health.run(
        async () => on('redis')(await r.take(key, points)),
        async () => on('memory')(await m.take(key, points)),
      ),
    takeWhileUnder: (key, points) =>
      health.run(
        async () => on('redis')(await r.takeWhileUnder(key, points)),
        async () => on('memory')(await m.takeWhileUnder(key, points)),
      ),
    async giveBack(key, points, where) {
      // Taken in memory: given back there, even once Redis is back. Taken on Redis while it is away: the
      // give-back is dropped (Redis keeps those points until its window ends).
      if (where === 'memory') return m.giveBack(key, points);
      await health.run(
        () => r.giveBack(key, points),
        async () => undefined,
      );
    },
    peek: (key) =>
      health.run(
        () => r.peek(key),
        () => m.peek(key),
      ),
    window: (key) =>
      health.run(
        () => r.window(key),
        () => m.window(key),
      ),
    reset: (key) =>
      health.run(
        () => r.reset(key),
        () => m.reset(key),
      ),
  };
}

function memoryLocks(): Locks {
  const until = new Map<string, { untilMs: number; expiresAt: number }>();
  return {
    async lock(key, untilMs, ttlMs) {
      until.set(key, { untilMs, expiresAt: Date.now() + ttlMs });
      if (until.size > 100_000) sweep(until);
    },
    async lockedUntil(key) {
      const entry = until.get(key);
      if (!entry) return null;
      if (entry.expiresAt <= Date.now()) {
        until.delete(key);
        return null;
      }
      return entry.untilMs;
    },
  };
}

function sweep(map: Map<string, { expiresAt: number }>): void {
  const now = Date.now();
  for (const [key, entry] of map) if (entry.expiresAt <= now) map.delete(key);
}

function redisLocks(redis: Redis, prefix: string, health: RedisHealth): Locks {
  // Every lock is also kept in memory, so a lock this process set still holds here while Redis is away.
  const local = memoryLocks();
  return {
    async lock(key, untilMs, ttlMs) {
      await local.lock(key, untilMs, ttlMs);
      await health.run(
        async () => {
          await redis.set(`${prefix}:${key}`, String(untilMs), 'PX', Math.max(1, Math.ceil(ttlMs)));
        },
        async () => undefined,
      );
    },
    async lockedUntil(key) {
      const mine = await local.lockedUntil(key);
      const value = await health.run(
        () => redis.get(`${prefix}:${key}`),
        async () => null,
      );
      const shared = value === null ? null : Number(value);
      if (mine === null) return shared;
      return shared === null ? mine : Math.max(mine, shared);
    },
  };
}
