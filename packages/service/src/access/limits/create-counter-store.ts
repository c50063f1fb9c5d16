import type { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { adjustInMemory, chargeInMemory } from './charge-in-memory.js';
import type { Charged, ChargeStep, Counter, CounterStore, LockCheck, Locks } from './counter-store.js';
import { type LeasedAdjustment, LeasedCharges, type LeasedCounter, type LeasedStep } from './leased-charges.js';
import { LockMirror } from './lock-mirror.js';
import { isHeld, LockTable, memoryLocks, redisLocks } from './lock-table.js';
import { type MemoryOps, MemoryWindows, memoryCounter, memoryOps } from './memory-windows.js';
import { redisCounter, redisOps } from './redis-counter.js';
import { type AwayReason, type HealthLogger, RedisHealth, type RequestBudget } from './redis-health.js';
import { limitScripts, type ScriptAnswer, type ScriptStep } from './redis-scripts.js';

// Where counters and locks live: process memory (the embedded default) or Redis, shared by every API
// process. With Redis every counter keeps a memory twin and every lock a memory copy; one RedisHealth per
// process decides, for all of them at once, whether Redis is used or the memory side is (docs/limits.md,
// "When Redis fails"). A Redis failure therefore degrades to per-process limits, never to a failed request.
// While Redis is up, a charge spends slices of each window leased from Redis and checks the locks in a mirror
// of them (leased-charges.ts, lock-mirror.ts), so a busy key does not cost a round trip per request.

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
      locksMirrored: false,
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
  const budgetMs = options.budgetMs ?? 250;
  const leased = new LeasedCharges(scripts, health, Math.min(budgetMs, 1000));
  const lockChannel = `${prefix}:locks`;
  /** Each lock table's copies by the prefix of their keys on Redis: a notice also updates a copy it names. */
  const copies = new Map<string, LockTable>();
  const mirror = new LockMirror(redis, lockChannel, `${prefix}:lock:*`, (key, untilMs, ttlMs) => {
    for (const [keyPrefix, local] of copies)
      if (key.startsWith(keyPrefix)) local.follow(key.slice(keyPrefix.length), untilMs, ttlMs);
  });
  // A client closed for good takes the mirror's connection with it.
  redis.on('end', () => mirror.close());
  const setLock = (key: string, untilMs: number, ttlMs: number) => {
    // A process that keeps a copy of a lock listens for its later values (an unlock by another process).
    mirror.ensure();
    return scripts.lock(key, untilMs, ttlMs, lockChannel);
  };
  /**
   * The hot path, while Redis is up: the locks from this process's copies and the mirror when it is live (else
   * on Redis, in the lease script), the counters from the leases. Undefined when a lock this process set holds
   * (the locks before it are then asked on Redis, below).
   */
  const leasedCharge = (
    locks: readonly LockCheck[],
    now: number,
    steps: readonly ChargeStep[],
    budget: RequestBudget | undefined,
  ): Promise<Charged> | undefined => {
    mirror.ensure();
    const live = mirror.live;
    const lockKeys: string[] = [];
    for (const [i, check] of locks.entries()) {
      const parts = partsOf(lockParts, check.locks);
      if (isHeld(parts.local.lockedUntil(check.key), now)) return undefined;
      const key = parts.key(check.key);
      if (!live) lockKeys.push(key);
      else if (isHeld(mirror.lockedUntil(key), now)) return Promise.resolve({ ok: false, lock: i });
    }
    const leasedSteps: LeasedStep[] = [];
    for (const s of steps) {
      const parts = partsOf(counterParts, s.counter);
      leasedSteps.push({ counter: parts.leased as LeasedCounter, id: s.key, rule: s.rule, points: s.points });
    }
    const inMemory = () =>
      chargeInMemory(
        locks.map((l) => ({ local: partsOf(lockParts, l.locks).local, key: l.key })),
        now,
        steps.map((s) => ({ ...s, memory: partsOf(counterParts, s.counter).memory })),
      );
    return leased.charge(lockKeys, now, leasedSteps, budget, inMemory);
  };
  return {
    kind: 'redis',
    counter(name, points, duration) {
      const keyPrefix = `${prefix}:${name}`;
      const memory = memoryOps(new MemoryWindows(duration), points);
      // No insurance limiter: the fallback is the health's decision, so every counter switches together.
      const shared = new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration });
      const counter = redisCounter(redisOps(shared, points), memory, health);
      // rate-limiter-flexible's key for `key`: the scripts count on the same keys.
      const key = (id: string) => `${keyPrefix}:${id}`;
      counterParts.set(counter, {
        memory,
        key,
        limit: points,
        seconds: duration,
        leased: leased.counter(key, points, duration),
      });
      return counter;
    },
    locks(name) {
      const lockPrefix = `${prefix}:lock:${name}`;
      const local = new LockTable();
      copies.set(`${lockPrefix}:`, local);
      const locks = redisLocks(redis, lockPrefix, local, health, setLock);
      lockParts.set(locks, { local, key: (key) => `${lockPrefix}:${key}` });
      return locks;
    },
    async charge(locks, now, steps, budget) {
      if (steps.length > 0 && health.up) {
        const hot = leasedCharge(locks, now, steps, budget);
        if (hot) return hot;
      }
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
    adjust(all, on, budget) {
      const inMemory = all.map((c) => ({ ...c, memory: partsOf(counterParts, c.counter).memory }));
      if (on === 'memory') return adjustInMemory(inMemory);
      // Changes of a charge served from leases go back to the lease of the window they came from.
      const ofLeases: LeasedAdjustment[] = [];
      const changes = all.filter((c) => {
        if (c.lease === undefined) return true;
        const parts = partsOf(counterParts, c.counter);
        if (parts.leased) ofLeases.push({ counter: parts.leased, id: c.key, points: c.points, lease: c.lease });
        return !parts.leased;
      });
      if (ofLeases.length > 0) leased.adjust(ofLeases, budget);
      if (changes.length === 0) return;
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
    get locksMirrored() {
      return mirror.live;
    },
    close: () => {
      health.close();
      leased.close();
      mirror.close();
    },
  };
}

/** A counter's limit and window, its key on Redis and its memory twin. */
interface CounterParts {
  memory: MemoryOps;
  key(key: string): string;
  limit: number;
  seconds: number;
  /** Its leases (Redis counters only). */
  leased?: LeasedCounter;
}

/** A lock store's memory table (the store itself without Redis) and its key on Redis. */
interface LockParts {
  local: LockTable;
  key(key: string): string;
}

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
