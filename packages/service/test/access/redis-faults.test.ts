import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AccessRequest } from '../../src/access/access-control.js';
import { LEASE_MS } from '../../src/access/limits/lease-table.js';
import { redisClientOptions } from '../../src/access/limits/redis-health.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { ApiError } from '../../src/errors/catalogue.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { type AccessHarness, accessHarness } from './http-harness.js';
import { delayProxy, HAS_REDIS_SERVER, type OwnRedis, startOwnRedis } from './own-redis.js';

// A Redis fault never takes the service down, and costs a request at most one bounded wait.
// Every test runs its own redis-server (never the shared one) and hangs it (SIGSTOP), kills it or slows it.

// The budget is long beside what a busy 2-core machine adds to a request (seen: 511 ms at load average 9),
// so "no wait" can be told from "one budget". SLACK is that noise: every bound below stays under what the
// fault would cost without a per-request budget (a budget per Redis command).
const BUDGET = 1500;
const SLACK = 800;
const FAST: Partial<Limits> = { keyCacheMs: 0, redisBudgetMs: BUDGET, redisProbeMs: 200 };

interface Line {
  level: 'warn' | 'info';
  message: string;
  reason?: string;
}

function recorder() {
  const lines: Line[] = [];
  return {
    lines,
    logger: {
      warn: (fields: object, message: string) => lines.push({ level: 'warn', message, ...fields }),
      info: (fields: object, message: string) => lines.push({ level: 'info', message, ...fields }),
    },
    away: () => lines.filter((l) => l.level === 'warn' && l.message.startsWith('redis away')),
    back: () => lines.filter((l) => l.level === 'info' && l.message.startsWith('redis back')),
  };
}

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A lease idle for LEASE_MS hands back what it holds at the next sweep (leased-charges.ts). */
const idleLeasesHandedBack = () => new Promise((resolve) => setTimeout(resolve, 3 * LEASE_MS));

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error.retryAfter === undefined ? error.code : `${error.code} ${error.retryAfter}`;
  }
}

describe.skipIf(!HAS_REDIS_SERVER)(
  `Redis faults have a time budget (own redis-server)${HAS_REDIS_SERVER ? '' : ' (skipped: redis-server not on PATH)'}`,
  () => {
    let redis: OwnRedis;
    let store: Store;
    let prefix: string;
    const clients: Redis[] = [];
    const closers: (() => unknown)[] = [];

    const client = async (url = redis.url) => {
      const c = new Redis(url, redisClientOptions(BUDGET));
      clients.push(c);
      await new Promise<void>((resolve, reject) => {
        c.once('ready', () => resolve());
        setTimeout(() => reject(new Error('redis client not ready')), 5000);
      });
      return c;
    };

    beforeAll(async () => {
      redis = await startOwnRedis();
    });
    afterAll(async () => {
      await redis?.close();
    });
    beforeEach(async () => {
      prefix = `crmx-fault-${Date.now()}-${Math.random().toString(36).slice(2)}`;
      store = new SqliteStore({ path: ':memory:' });
      await store.migrate();
    });
    afterEach(async () => {
      redis.resume();
      for (const close of closers.splice(0)) await close();
      for (const c of clients.splice(0)) c.disconnect();
      await store.close();
    });

    /** The HTTP app over Redis (process A) and a second access control on its own client (process B). */
    const twoProcesses = async (limits: Partial<Limits> = {}, url = redis.url) => {
      const logA = recorder();
      const logB = recorder();
      const h = await accessHarness(
        store,
        { ...FAST, ...limits },
        { redis: await client(url), redisPrefix: prefix, logger: logA.logger },
      );
      const b = new StoreAccessControl({
        store,
        clock: h.clock,
        limits: { ...DEFAULT_LIMITS, ...FAST, ...limits },
        redis: await client(url),
        redisPrefix: prefix,
        logger: logB.logger,
      });
      closers.push(
        () => h.app.close(),
        () => h.access.close(),
        () => b.close(),
      );
      return { h, b, logA, logB };
    };

    const timed = async (h: AccessHarness, url: string) => {
      const started = performance.now();
      const res = await h.inject(url);
      return { status: res.statusCode, ms: performance.now() - started };
    };

    /**
     * Items of one `/v1/teams` request by process A that process B reads on Redis. Read once A's idle leases
     * are handed back, before and after: until then B counts A's unspent slice as spent (docs/limits.md).
     */
    const readByOtherProcess = async (h: AccessHarness, b: StoreAccessControl) => {
      await idleLeasesHandedBack();
      const before = (await b.usage(h.integrationId, [])).itemsThisMinute;
      expect((await timed(h, '/v1/teams')).status).toBe(200);
      await idleLeasesHandedBack();
      return (await b.usage(h.integrationId, [])).itemsThisMinute - before;
    };

    it('a hung Redis (SIGSTOP) adds at most one budget to each list request; away and back are logged once; after SIGCONT the limits are back on Redis (shared counts read once idle leases are handed back)', async () => {
      const { h, b, logA } = await twoProcesses();
      const healthy: number[] = [];
      for (let i = 0; i < 5; i++) healthy.push((await timed(h, '/v1/teams')).ms);

      redis.hang();
      // Requests in flight when Redis stops: each waits one budget at most, then all go on at once.
      const first = await Promise.all(Array.from({ length: 5 }, () => timed(h, '/v1/teams')));
      const later: { status: number; ms: number }[] = [];
      for (let i = 0; i < 10; i++) later.push(await timed(h, '/v1/teams'));
      // Hung longer than the client's socket timeout: it drops the connection and reconnects meanwhile.
      await new Promise((resolve) => setTimeout(resolve, redisClientOptions(BUDGET).socketTimeout + 500));
      for (let i = 0; i < 5; i++) later.push(await timed(h, '/v1/teams'));
      // Nothing piles up behind the hung server: no request sends to it, at most one probe PING is out.
      for (const c of clients) expect(c.commandQueue.length).toBeLessThanOrEqual(3);
      for (const r of [...first, ...later]) {
        expect(r.status).toBe(200);
        expect(r.ms).toBeLessThan(BUDGET + SLACK);
      }
      // Once away, a request does not wait on Redis at all: no request after the first wave takes a budget.
      expect(Math.max(...later.map((r) => r.ms))).toBeLessThan(BUDGET);
      expect(logA.away()).toHaveLength(1);
      expect(logA.away()[0]?.reason).toBe('timeout');
      expect(h.access.redisUp).toBe(false);

      redis.resume();
      await until(() => h.access.redisUp && b.redisUp);
      expect(logA.back()).toHaveLength(1);
      expect(logA.away()).toHaveLength(1);
      // Shared again: what process A counts, process B reads from Redis.
      expect(await readByOtherProcess(h, b)).toBe(2);
      expect(Math.max(...healthy)).toBeLessThan(BUDGET + SLACK);
    }, 60_000);

    it('a Redis refusing connections (killed) adds no wait; it is logged away once and is used again once restarted', async () => {
      const { h, b, logA } = await twoProcesses();
      expect((await timed(h, '/v1/teams')).status).toBe(200);
      await redis.kill();
      for (let i = 0; i < 10; i++) {
        const r = await timed(h, '/v1/teams');
        expect(r.status).toBe(200);
        expect(r.ms).toBeLessThan(BUDGET);
      }
      expect(logA.away()).toHaveLength(1);
      expect(logA.away()[0]?.reason).toBe('connection error');
      await redis.start();
      await until(() => h.access.redisUp && b.redisUp);
      expect(logA.back()).toHaveLength(1);
      expect(await readByOtherProcess(h, b)).toBe(2);
    }, 30_000);

    it('a slow Redis (every command 1 s late) costs a request one budget in all, not one per command, and is not used again while PING stays slow', async () => {
      const proxy = await delayProxy(redis.port, 500);
      closers.push(() => proxy.close());
      const { h, logA } = await twoProcesses({}, proxy.url);
      const times: number[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await timed(h, '/v1/teams');
        expect(r.status).toBe(200);
        times.push(r.ms);
      }
      // The first list request makes four Redis calls one after the other (808 ms with every command 200 ms
      // late and no budget in the way): 4 s at 1 s each without the per-request budget.
      for (const ms of times) expect(ms).toBeLessThan(BUDGET + SLACK);
      expect(logA.away()).toHaveLength(1);
      expect(logA.away()[0]?.reason).toBe('timeout');
      // The probe answers in 1 s, over a quarter of the budget: it stays away without flapping.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(h.access.redisUp).toBe(false);
      expect(logA.back()).toHaveLength(0);
      expect(logA.away()).toHaveLength(1);
    }, 30_000);

    describe('the written policy while Redis is away (docs/limits.md)', () => {
      const req = (authorization: string | undefined, ip = '192.0.2.10'): AccessRequest => ({
        authorization,
        origin: undefined,
        ip,
      });
      const wrong = (key: string) => `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;

      it('rate allowance and daily quota count in this process only (each process allows the full amount); memory counts are not merged back when Redis returns', async () => {
        const { h, b } = await twoProcesses({ itemsPerMinute: 100, dailyItemQuota: 1000 });
        const a = h.access;
        const principal = await a.authenticate(req(h.key));
        await (await a.reserve(principal, 'sync', 30, true)).settle(30);
        expect(await b.usage(h.integrationId, [])).toMatchObject({ itemsThisMinute: 30, quotaUsedToday: 30 });

        redis.hang();
        // A read first finds Redis away: a write in flight at that moment may still land when Redis resumes.
        await a.usage(h.integrationId, []);
        await b.usage(h.integrationId, []);
        await (await a.reserve(principal, 'sync', 100, true)).settle(100);
        await (await b.reserve(principal, 'sync', 100, true)).settle(100);
        expect(await outcome(a.reserve(principal, 'sync', 1, true))).toMatch(/^rate_limited \d+$/);
        expect(await outcome(b.reserve(principal, 'sync', 1, true))).toMatch(/^rate_limited \d+$/);
        expect(await a.usage(h.integrationId, [])).toMatchObject({ itemsThisMinute: 100, quotaUsedToday: 100 });

        redis.resume();
        await until(() => a.redisUp && b.redisUp);
        expect(await a.usage(h.integrationId, [])).toMatchObject({ itemsThisMinute: 30, quotaUsedToday: 30 });
        expect(await b.usage(h.integrationId, [])).toMatchObject({ itemsThisMinute: 30, quotaUsedToday: 30 });
      }, 30_000);

      it('a reservation taken on Redis and settled while it is away is not refunded there; one taken in memory is settled in memory after Redis is back', async () => {
        const { h, b } = await twoProcesses({ itemsPerMinute: 100 });
        const a = h.access;
        const principal = await a.authenticate(req(h.key));
        const onRedis = await a.reserve(principal, 'sync', 40, true);
        redis.hang();
        await a.usage(h.integrationId, []);
        const inMemory = await a.reserve(principal, 'sync', 30, true);
        await onRedis.settle(5);
        expect(await a.usage(h.integrationId, [])).toMatchObject({ itemsThisMinute: 30, quotaUsedToday: 30 });

        redis.resume();
        await until(() => a.redisUp && b.redisUp);
        await inMemory.settle(10);
        expect(await b.usage(h.integrationId, [])).toMatchObject({ itemsThisMinute: 40, quotaUsedToday: 40 });
      }, 30_000);

      it('a lock known to this process still holds; a lock set in Redis by another process is not seen until Redis is back', async () => {
        const { h, b } = await twoProcesses({ authFailuresPerKey: 3 });
        const a = h.access;
        for (let i = 0; i < 3; i++)
          expect(await outcome(a.authenticate(req(wrong(h.key))))).toBe('invalid_credentials');
        expect(await outcome(b.authenticate(req(wrong(h.key))))).toBe('rate_limited 600');

        redis.hang();
        expect(await outcome(a.authenticate(req(wrong(h.key))))).toBe('rate_limited 600');
        expect(await outcome(b.authenticate(req(wrong(h.key), '192.0.2.11')))).toBe('invalid_credentials');

        redis.resume();
        await until(() => a.redisUp && b.redisUp);
        expect(await outcome(b.authenticate(req(wrong(h.key), '192.0.2.12')))).toBe('rate_limited 600');
      }, 30_000);

      it('auth failures and the firewall budget count per process; a lock set while away is not copied to Redis', async () => {
        const { h, b } = await twoProcesses({ authFailuresPerIp: 4, firewallRequestsPerMinute: 4 });
        const a = h.access;
        redis.hang();
        const ip = '203.0.113.40';
        for (const access of [a, a, b, b]) {
          expect(await outcome(access.authenticate(req(undefined, ip)))).toBe('invalid_credentials');
        }
        // Four failures split two and two: neither process reached its threshold.
        expect(await outcome(a.authenticate(req(h.key, ip)))).toBe('ok');
        for (let i = 0; i < 2; i++) await outcome(a.authenticate(req(undefined, ip)));
        expect(await outcome(a.authenticate(req(h.key, ip)))).toBe('rate_limited 600');
        expect(await outcome(b.authenticate(req(h.key, ip)))).toBe('ok');

        for (let i = 0; i < 4; i++) expect(await a.firewallBlocked('203.0.113.41', false)).toBe(false);
        expect(await a.firewallBlocked('203.0.113.41', false)).toBe(true);
        expect(await b.firewallBlocked('203.0.113.41', false)).toBe(false);

        redis.resume();
        await until(() => a.redisUp && b.redisUp);
        expect(await a.firewallBlocked('203.0.113.41', true)).toBe(true);
        expect(await b.firewallBlocked('203.0.113.41', true)).toBe(false);
        expect(await outcome(b.authenticate(req(h.key, ip)))).toBe('ok');
      }, 30_000);
    });
  },
);
