import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AccessRequest } from '../../src/access/access-control.js';
import { createIntegration } from '../../src/access/integrations.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { ManualClock } from '../../src/clock.js';
import { ApiError } from '../../src/errors/catalogue.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { seedTeam } from './fixtures.js';

// Counters, lockouts and locks through Redis, shared by several access-control instances (as several API
// processes would), and the in-memory fallback when Redis is unreachable. Needs REDIS_URL.

const REDIS_URL = process.env.REDIS_URL;

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error.retryAfter === undefined ? error.code : `${error.code} ${error.retryAfter}`;
  }
}

const req = (authorization: string | undefined, ip = '192.0.2.10'): AccessRequest => ({
  authorization,
  origin: undefined,
  ip,
});

let store: Store;
let key: string;
let integrationId: string;
const clock = new ManualClock();
const limits: Limits = { ...DEFAULT_LIMITS };

beforeEach(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.migrate();
  await seedTeam(store, 'team_solo');
  const created = await createIntegration(store, clock, { teams: ['team_solo'], name: 'R' });
  key = `Bearer ${created.key}`;
  integrationId = created.integration.id;
});
afterEach(() => store.close());

describe.skipIf(!REDIS_URL)(`limits shared through Redis${REDIS_URL ? '' : ' (skipped: set REDIS_URL)'}`, () => {
  const clients: Redis[] = [];
  let prefix: string;
  const connect = async () => {
    const client = new Redis(REDIS_URL as string, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    clients.push(client);
    await new Promise<void>((resolve, reject) => {
      client.once('ready', () => resolve());
      client.once('error', reject);
    });
    return client;
  };
  const two = async (over: Partial<Limits> = {}) => {
    // A generous Redis budget: on a loaded machine a slow answer would otherwise send one process to its
    // memory counters and split what the test expects shared (the fallback has tests of its own).
    const l = { ...limits, redisBudgetMs: 5_000, ...over };
    return [
      new StoreAccessControl({ store, clock, limits: l, redis: await connect(), redisPrefix: prefix }),
      new StoreAccessControl({ store, clock, limits: l, redis: await connect(), redisPrefix: prefix }),
    ] as const;
  };
  beforeEach(() => {
    // A fresh prefix per test: counters of one test never leak into the next.
    prefix = `crmx-test-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  });
  afterAll(async () => {
    const cleaner = await connect();
    // This process's keys only: another test run may be using the same Redis at the same time.
    const leftovers = await cleaner.keys(`crmx-test-${process.pid}-*`);
    if (leftovers.length) await cleaner.del(...leftovers);
    for (const c of clients) c.disconnect();
  });

  it('one rate limit for two processes: items taken in one are missing in the other', async () => {
    const [a, b] = await two({ itemsPerMinute: 100 });
    const principal = await a.authenticate(req(key));
    await (await a.reserve(principal, 'sync', 60, true)).settle(60);
    expect(await outcome(b.reserve(principal, 'sync', 60, true))).toMatch(/^rate_limited \d+$/);
    const r = await b.reserve(principal, 'sync', 40, true);
    await r.settle(10);
    await (await a.reserve(principal, 'sync', 30, true)).settle(30);
    expect(await outcome(a.reserve(principal, 'sync', 1, true))).toMatch(/^rate_limited/);
  });

  it('one lockout for two processes: 20 failures split between them lock the key at the 20th', async () => {
    const [a, b] = await two();
    const wrong = `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    for (let i = 1; i <= 20; i++) {
      const access = i % 2 ? a : b;
      expect(await outcome(access.authenticate(req(wrong, `198.51.100.${i}`)))).toBe('invalid_credentials');
    }
    expect(await outcome(a.authenticate(req(wrong, '198.51.100.50')))).toBe('rate_limited 600');
    expect(await outcome(b.authenticate(req(wrong, '198.51.100.51')))).toBe('rate_limited 600');
    expect(await outcome(b.authenticate(req(key, '198.51.100.51')))).toBe('ok');
  });

  it('one address lockout for two processes at the 60th failure', async () => {
    const [a, b] = await two();
    for (let i = 1; i <= 60; i++) {
      expect(await outcome((i % 2 ? a : b).authenticate(req(undefined, '203.0.113.60')))).toBe('invalid_credentials');
    }
    expect(await outcome(a.authenticate(req(key, '203.0.113.60')))).toBe('rate_limited 600');
    expect(await outcome(b.authenticate(req(key, '203.0.113.60')))).toBe('rate_limited 600');
  });

  it('the daily quota is one atomic operation: two processes racing at the edge of the quota never both pass', async () => {
    const [a, b] = await two({ dailyItemQuota: 30 });
    const principal = await a.authenticate(req(key));
    await (await a.reserve(principal, 'sync', 29, true)).settle(29);
    for (let round = 0; round < 20; round++) {
      const raced = await Promise.allSettled([
        a.reserve(principal, 'sync', 25, true),
        b.reserve(principal, 'sync', 25, true),
      ]);
      const passed = raced.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      expect(passed).toHaveLength(1);
      await passed[0]?.settle(0);
    }
    expect((await b.usage(integrationId, [])).quotaUsedToday).toBe(29);
  });

  it('the quota is shared and keyed by UTC day', async () => {
    const [a, b] = await two({ dailyItemQuota: 10 });
    const principal = await a.authenticate(req(key));
    await (await a.reserve(principal, 'sync', 10, true)).settle(10);
    expect(await outcome(b.reserve(principal, 'sync', 1, true))).toMatch(/^quota_exceeded \d+$/);
  });
});

describe('Redis unreachable: the service keeps answering from per-process memory', () => {
  it('limits, lockouts and quota still work with a client pointed at a closed port (no error)', async () => {
    const dead = new Redis('redis://127.0.0.1:1', {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 1000,
      lazyConnect: false,
    });
    dead.on('error', () => {});
    try {
      const access = new StoreAccessControl({
        store,
        clock,
        limits: { ...limits, itemsPerMinute: 50, authFailuresPerKey: 3 },
        redis: dead,
        redisPrefix: 'crmx-test-dead',
      });
      const principal = await access.authenticate(req(key));
      await (await access.reserve(principal, 'sync', 40, true)).settle(40);
      expect(await outcome(access.reserve(principal, 'sync', 20, true))).toMatch(/^rate_limited \d+$/);
      const wrong = `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
      for (let i = 0; i < 3; i++) expect(await outcome(access.authenticate(req(wrong)))).toBe('invalid_credentials');
      expect(await outcome(access.authenticate(req(wrong)))).toBe('rate_limited 600');
      expect(await outcome(access.authenticate(req(key)))).toBe('ok');
      expect(await access.firewallBlocked('203.0.113.1', false)).toBe(false);
      const usage = await access.usage(integrationId, []);
      expect(usage.itemsThisMinute).toBe(40);
    } finally {
      dead.disconnect();
    }
  });
});
