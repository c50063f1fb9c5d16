import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../src/access/access-control.js';
import { createIntegration } from '../../src/access/integrations.js';
import { LEASE_MS, LEASE_SHARE } from '../../src/access/limits/lease-table.js';
import { redisClientOptions } from '../../src/access/limits/redis-health.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { ManualClock } from '../../src/clock.js';
import { ApiError } from '../../src/errors/catalogue.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { seedTeam } from './fixtures.js';
import { delayProxy, HAS_REDIS_SERVER, type OwnRedis, startOwnRedis } from './own-redis.js';

// Leases (docs/limits.md, "Leases"): several processes, each with its own leases, spend one key's window and
// day on one Redis. One of them reaches Redis through a link that holds every packet 10 ms, as a process on
// another host would. The bounds checked are the ones docs/performance.md states: with N processes a key gets
// no more than its limit in a window, and at most one reservation past its daily quota; the approximation is
// the other way, items held unspent in other processes' slices, at most (N - 1) slices.

const N = 3;
/** Requests in flight per process. */
const IN_FLIGHT = 4;

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error.code;
  }
}

describe.skipIf(!HAS_REDIS_SERVER)(
  `leases of one key's window across processes and hosts (own redis-server)${HAS_REDIS_SERVER ? '' : ' (skipped: redis-server not on PATH)'}`,
  () => {
    let redis: OwnRedis;
    let remote: { url: string; close(): Promise<void> };
    let store: SqliteStore;
    let principal: Principal;
    let prefix: string;
    const clients: Redis[] = [];
    const controls: StoreAccessControl[] = [];
    const clock = new ManualClock(Date.parse('2026-01-15T12:00:00.000Z'));

    const connect = async (url: string) => {
      const client = new Redis(url, redisClientOptions(2000));
      clients.push(client);
      await new Promise<void>((resolve) => client.once('ready', () => resolve()));
      return client;
    };
    /** N processes: the first N - 1 beside Redis, the last one behind the 10 ms link. */
    const processes = async (limits: Partial<Limits>) => {
      // A generous budget: a slow answer on a loaded machine must not send a process to its memory counters.
      const all: Limits = { ...DEFAULT_LIMITS, redisBudgetMs: 2000, ...limits };
      const made: StoreAccessControl[] = [];
      for (let i = 0; i < N; i++) {
        const url = i === N - 1 ? remote.url : redis.url;
        made.push(
          new StoreAccessControl({ store, clock, limits: all, redis: await connect(url), redisPrefix: prefix }),
        );
      }
      controls.push(...made);
      return made;
    };
    const scriptCalls = async () => {
      const info = await (await connect(redis.url)).info('commandstats');
      return [...info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    };

    /**
     * Every process runs IN_FLIGHT loops that reserve `size` items and keep `keep` of them, until refused.
     * Answers the items kept, the requests served and the refusals' codes.
     */
    const spend = async (made: readonly StoreAccessControl[], size: number, keep: (i: number) => number) => {
      let kept = 0;
      let served = 0;
      const refusals = new Set<string>();
      const loop = async (access: StoreAccessControl) => {
        for (let i = 0; ; i++) {
          let reservation: Awaited<ReturnType<StoreAccessControl['reserve']>>;
          try {
            reservation = await access.reserve(principal, 'sync', size, true);
          } catch (error) {
            refusals.add(await outcome(Promise.reject(error)));
            return;
          }
          const k = keep(i);
          kept += k;
          served += 1;
          await reservation.settle(k);
        }
      };
      await Promise.all(made.flatMap((access) => Array.from({ length: IN_FLIGHT }, () => loop(access))));
      return { kept, served, refusals };
    };

    beforeAll(async () => {
      redis = await startOwnRedis();
      remote = await delayProxy(redis.port, 10);
    });
    afterAll(async () => {
      await remote?.close();
      await redis?.close();
    });
    beforeEach(async () => {
      prefix = `crmx-lease-${Date.now()}-${Math.random().toString(36).slice(2)}`;
      store = new SqliteStore({ path: ':memory:' });
      await store.migrate();
      await seedTeam(store, 'team_solo');
      const created = await createIntegration(store, clock, { teams: ['team_solo'], name: 'Leases' });
      const probe = new StoreAccessControl({ store, clock, limits: DEFAULT_LIMITS });
      principal = await probe.authenticate({
        authorization: `Bearer ${created.key}`,
        origin: undefined,
        ip: '192.0.2.1',
      });
    });
    afterEach(async () => {
      for (const access of controls.splice(0)) access.close();
      for (const client of clients.splice(0)) client.disconnect();
      await store.close();
    });

    it(`with ${N} processes a key never gets more than its limit in a window, and at most (N - 1) slices less`, async () => {
      // A slice is sized by the key's use over the last half second, so each process's first half second
      // asks Redis for every request: the limit is large enough that most of the run comes after it.
      const limit = 200_000;
      const made = await processes({ itemsPerMinute: limit, dailyItemQuota: 1e12 });
      // Each process's first charge starts its lock mirror; until the mirror is live every charge asks Redis
      // (checking the locks there), which on a loaded machine can last the whole run. One item reserved and
      // handed back starts each here, and the count begins once every process checks the locks at home.
      for (const access of made) await (await access.reserve(principal, 'sync', 1, true)).settle(0);
      await vi.waitFor(() => expect(made.map((access) => access.locksMirrored)).toEqual(made.map(() => true)), {
        timeout: 20_000,
        interval: 10,
      });
      const before = await scriptCalls();
      // Pages of 10 items, most kept whole, every fourth one short (its give-back goes to the lease).
      const { kept, served, refusals } = await spend(made, 10, (i) => (i % 4 === 3 ? 4 : 10));
      const scripts = (await scriptCalls()) - before;
      expect([...refusals]).toEqual(['rate_limited']);
      expect(kept).toBeLessThanOrEqual(limit);
      // Refused only once the window, less the slices the other processes hold and the pages in flight, is spent.
      const slice = Math.floor(limit / LEASE_SHARE);
      expect(kept).toBeGreaterThanOrEqual(limit - (N - 1) * slice - N * IN_FLIGHT * 10);
      // Leases at work: far fewer scripts than requests (one per request before leases, and about 1.2 with
      // give-backs while no slice is sized yet). Three quarters still fails the one-script-per-request design.
      expect(scripts).toBeLessThan((served * 3) / 4);
    }, 60_000);

    it(`with ${N} processes a key gets at most one reservation past its daily quota`, async () => {
      const quota = 30_000;
      const made = await processes({ itemsPerMinute: 1e9, dailyItemQuota: quota });
      const { kept, refusals } = await spend(made, 10, () => 10);
      expect([...refusals]).toEqual(['quota_exceeded']);
      expect(kept).toBeLessThanOrEqual(quota + 10);
      expect(kept).toBeGreaterThanOrEqual(quota - (N - 1) * Math.floor(quota / LEASE_SHARE) - N * IN_FLIGHT * 10);
    }, 60_000);

    it('points a lease hands back after its window ended are not credited to the next window', async () => {
      const [a, b] = await processes({ itemsPerMinute: 1000, rateWindowSeconds: 1, dailyItemQuota: 1e12 });
      const held = await (a as StoreAccessControl).reserve(principal, 'sync', 500, true);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      // A new window: process B takes all of it, then A's request settles having used nothing.
      const whole = await (b as StoreAccessControl).reserve(principal, 'sync', 1000, true);
      await held.settle(0);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await outcome((b as StoreAccessControl).reserve(principal, 'sync', 1, true))).toBe('rate_limited');
      expect(await outcome((a as StoreAccessControl).reserve(principal, 'sync', 1, true))).toBe('rate_limited');
      await whole.settle(1000);
    });

    it('an idle lease hands back what it holds, so the other processes can spend it', async () => {
      const limit = 1_000_000;
      const [a, b] = await processes({ itemsPerMinute: limit, dailyItemQuota: 1e12 });
      // Process A is busy for a while: its slice grows with its use.
      const started = performance.now();
      let keptByA = 0;
      while (performance.now() - started < 2 * LEASE_MS) {
        await (await (a as StoreAccessControl).reserve(principal, 'sync', 1, true)).settle(1);
        keptByA += 1;
      }
      // Then idle: within two sweeps its slice is back on Redis, and B can take everything A did not keep.
      await new Promise((resolve) => setTimeout(resolve, 3 * LEASE_MS));
      const rest = limit - keptByA;
      expect(await outcome((b as StoreAccessControl).reserve(principal, 'sync', rest, true))).toBe('ok');
    });
  },
);
