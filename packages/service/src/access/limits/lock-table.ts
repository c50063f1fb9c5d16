import type { Redis } from 'ioredis';
import type { Locks } from './counter-store.js';
import { MemoryTable } from './memory-table.js';
import type { RedisHealth } from './redis-health.js';

/** True while a lock that ends at `until` holds at clock time `now`. */
export const isHeld = (until: number | null, now: number): boolean => until !== null && now < until;

/** Locks in this process's memory: each holds until its clock time and is forgotten after its ttl. */
export class LockTable {
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

/** Locks of this process's memory alone (no Redis configured). */
export function memoryLocks(table: LockTable): Locks {
  return {
    lock: async (key, untilMs, ttlMs) => table.lock(key, untilMs, ttlMs),
    lockedUntil: async (key) => table.lockedUntil(key),
  };
}

/**
 * Locks on Redis, each with a memory copy. `setLock` sets one on Redis with its notice to every process's
 * lock mirror (lock-mirror.ts).
 */
export function redisLocks(
  redis: Redis,
  prefix: string,
  local: LockTable,
  health: RedisHealth,
  setLock: (key: string, untilMs: number, ttlMs: number) => Promise<unknown>,
): Locks {
  // Every lock is also kept in memory, so a lock this process set still holds here while Redis is away.
  return {
    async lock(key, untilMs, ttlMs, budget) {
      local.lock(key, untilMs, ttlMs);
      await health.run(
        async () => {
          await setLock(`${prefix}:${key}`, untilMs, ttlMs);
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
