import type { Redis } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

// Where counters and locks live: process memory (the embedded default) or Redis, shared by every API
// process. With Redis each limiter carries a memory `insuranceLimiter` and each lock a memory copy, so a
// Redis failure degrades to per-process limits instead of failing requests (docs/limits.md).

export interface Counter {
  /** Adds `points`; the total in the current window (may exceed the limit: the caller decides). */
  add(key: string, points: number): Promise<{ consumed: number; msBeforeNext: number }>;
  /** Takes `points` if they fit under the limit, else rejects without keeping them. */
  take(key: string, points: number): Promise<{ ok: true } | { ok: false; msBeforeNext: number }>;
  /** Gives back points taken earlier in the window (never below zero). */
  giveBack(key: string, points: number): Promise<void>;
  /** What the window holds now (0 when empty). */
  peek(key: string): Promise<number>;
  /** Forgets the key's window. */
  reset(key: string): Promise<void>;
}

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
}

export function createCounterStore(options: { redis?: Redis | undefined; prefix?: string }): CounterStore {
  const prefix = options.prefix ?? 'crmx';
  const redis = options.redis;
  return {
    kind: redis ? 'redis' : 'memory',
    counter(name, points, duration) {
      const keyPrefix = `${prefix}:${name}`;
      const memory = new RateLimiterMemory({ keyPrefix, points, duration });
      const limiter: RateLimiterAbstract = redis
        ? new RateLimiterRedis({
            storeClient: redis,
            keyPrefix,
            points,
            duration,
            insuranceLimiter: memory,
            // Not connected: go to the insurance limiter at once rather than queue behind reconnects.
            rejectIfRedisNotReady: true,
          })
        : memory;
      return counterOf(limiter);
    },
    locks(name) {
      return redis ? redisLocks(redis, `${prefix}:lock:${name}`) : memoryLocks();
    },
  };
}

function counterOf(limiter: RateLimiterAbstract): Counter {
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
  return {
    add,
    giveBack,
    async take(key, points) {
      try {
        await limiter.consume(key, points);
        return { ok: true };
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        // consume() counts the points even when it refuses; a refused request must not use the allowance.
        await giveBack(key, points);
        return { ok: false, msBeforeNext: rejection.msBeforeNext };
      }
    },
    async peek(key) {
      const res = await limiter.get(key);
      return res ? Math.max(res.consumedPoints, 0) : 0;
    },
    async reset(key) {
      await limiter.delete(key);
    },
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

function redisLocks(redis: Redis, prefix: string): Locks {
  // Locks set while Redis was down stay in memory so the lock still holds in this process.
  const fallback = memoryLocks();
  const ready = () => redis.status === 'ready';
  return {
    async lock(key, untilMs, ttlMs) {
      await fallback.lock(key, untilMs, ttlMs);
      if (!ready()) return;
      try {
        await redis.set(`${prefix}:${key}`, String(untilMs), 'PX', Math.max(1, Math.ceil(ttlMs)));
      } catch {
        // Kept in memory above.
      }
    },
    async lockedUntil(key) {
      const local = await fallback.lockedUntil(key);
      if (!ready()) return local;
      try {
        const value = await redis.get(`${prefix}:${key}`);
        const shared = value === null ? null : Number(value);
        if (local === null) return shared;
        return shared === null ? local : Math.max(local, shared);
      } catch {
        return local;
      }
    },
  };
}
