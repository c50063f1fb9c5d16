import type { Redis } from 'ioredis';
import type { Locks } from './counter-store.js';
import { MemoryTable } from './memory-table.js';
import type { RedisHealth } from './redis-health.js';

/** A text matched literally by Redis's glob patterns (SCAN MATCH). */
const globEscaped = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');

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

  /**
   * A newer value of a lock this table holds, set on Redis by any process (its notice, lock-mirror.ts): an
   * unlock from another process thus ends this process's copy too. A key the table does not hold is left out.
   */
  follow(key: string, untilMs: number, ttlMs: number): void {
    if (this.until.get(key)) this.lock(key, untilMs, ttlMs);
  }

  /** Every lock this table holds at clock time `now`. */
  held(now: number): { key: string; untilMs: number }[] {
    const out: { key: string; untilMs: number }[] = [];
    const real = Date.now();
    for (const [key, entry] of this.until.all())
      if (entry.expiresAt > real && isHeld(entry.untilMs, now)) out.push({ key, untilMs: entry.untilMs });
    return out;
  }
}

/** Locks of this process's memory alone (no Redis configured). */
export function memoryLocks(table: LockTable): Locks {
  return {
    lock: async (key, untilMs, ttlMs) => table.lock(key, untilMs, ttlMs),
    lockedUntil: async (key) => table.lockedUntil(key),
    held: async (now) => table.held(now),
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
    async held(now) {
      // Redis's locks (every process's), then this process's own, the later end winning as in `lockedUntil`.
      const ends = new Map<string, number>();
      const shared = await health.run(
        async () => {
          const found: [string, number][] = [];
          const pattern = `${globEscaped(prefix)}:*`;
          let cursor = '0';
          do {
            const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
            cursor = next;
            if (keys.length === 0) continue;
            const values = await redis.mget(keys);
            keys.forEach((key, i) => {
              const value = values[i];
              if (value !== null && value !== undefined) found.push([key.slice(prefix.length + 1), Number(value)]);
            });
          } while (cursor !== '0');
          return found;
        },
        async () => [] as [string, number][],
      );
      for (const [key, until] of shared) if (isHeld(until, now)) ends.set(key, until);
      for (const { key, untilMs } of local.held(now)) ends.set(key, Math.max(untilMs, ends.get(key) ?? untilMs));
      return [...ends].map(([key, untilMs]) => ({ key, untilMs }));
    },
  };
}
