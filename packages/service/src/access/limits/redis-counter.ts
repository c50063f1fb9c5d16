import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { type Counter, keeps, takenOn, type Window } from './counter-store.js';
import type { MemoryOps } from './memory-windows.js';
import type { RedisHealth } from './redis-health.js';

/** The counter operations over the Redis limiter; every one is at most two atomic adds on it. */
export function redisOps(limiter: RateLimiterAbstract, limit: number) {
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

export type RedisOps = ReturnType<typeof redisOps>;

/** A counter on Redis with its memory twin: the health decides, per operation, which one counts. */
export function redisCounter(r: RedisOps, m: MemoryOps, health: RedisHealth): Counter {
  return {
    add: (key, points, budget) =>
      health.run(
        () => r.add(key, points),
        async () => m.add(key, points),
        budget,
      ),
    take: (key, points, budget) =>
      health.run(
        async () => takenOn('redis')(await r.take(key, points)),
        async () => takenOn('memory')(m.take(key, points)),
        budget,
      ),
    takeWhileUnder: (key, points, budget) =>
      health.run(
        async () => takenOn('redis')(await r.takeWhileUnder(key, points)),
        async () => takenOn('memory')(m.takeWhileUnder(key, points)),
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
