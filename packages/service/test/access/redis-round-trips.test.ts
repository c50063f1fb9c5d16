import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LEASE_MS } from '../../src/access/limits/lease-table.js';
import { redisClientOptions } from '../../src/access/limits/redis-health.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { type AccessHarness, accessHarness, putPlainRecords } from './http-harness.js';
import { HAS_REDIS_SERVER, type OwnRedis, startOwnRedis } from './own-redis.js';

// What a request sends Redis (docs/limits.md, "One round trip" and "Leases"): every command the API's client
// sends is recorded, and the give-back of an unused reservation can be held back unsent, which shows that the
// answer never waits for it. On a redis-server of the test's own.

const TEAM = { 'service-team': 'team_a1' };

interface Sent {
  name: string;
  args: string[];
}

/** Records the commands `client` sends; while `holding`, a give-back script is kept unsent until released. */
function recorder(client: Redis) {
  const sent: Sent[] = [];
  const held: { send(): void; fail(error: Error): void }[] = [];
  let holding = false;
  const send = client.sendCommand.bind(client);
  // A charge carries its steps' rules; a give-back has none.
  const isGiveBack = (s: Sent) =>
    s.name.startsWith('eval') && !s.args.some((a) => ['fits', 'under', 'read'].includes(a));
  client.sendCommand = ((command, stream) => {
    const entry = { name: command.name, args: command.args.map(String) };
    sent.push(entry);
    if (holding && isGiveBack(entry)) {
      held.push({ send: () => send(command, stream), fail: (error) => command.reject(error) });
      return command.promise;
    }
    return send(command, stream);
  }) as Redis['sendCommand'];
  return {
    sent,
    held,
    isGiveBack,
    hold(on: boolean) {
      holding = on;
    },
    /** The commands sent while `work` ran. */
    async during<T>(work: () => Promise<T>): Promise<{ result: T; commands: Sent[] }> {
      const from = sent.length;
      const result = await work();
      return { result, commands: sent.slice(from) };
    },
  };
}

async function putCalls(store: Store, count: number): Promise<void> {
  await putPlainRecords(
    store,
    'call',
    'team_a1',
    Array.from({ length: count }, (_, i) => `call_rt${i + 1}`),
  );
}

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400 && !(await check()); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(await check()).toBe(true);
}

describe.skipIf(!HAS_REDIS_SERVER)(
  `at most one Redis round trip per request, none while a lease covers it (own redis-server)${HAS_REDIS_SERVER ? '' : ' (skipped: redis-server not on PATH)'}`,
  () => {
    let redis: OwnRedis;
    let store: SqliteStore;
    let api: Redis;
    let reader: Redis;
    let other: Redis;
    let h: AccessHarness;
    let rec: ReturnType<typeof recorder>;
    const away: string[] = [];
    const prefix = 'crmx-rt';

    beforeAll(async () => {
      redis = await startOwnRedis();
    });
    afterAll(async () => {
      await redis?.close();
    });
    beforeEach(async () => {
      const connect = async () => {
        const c = new Redis(redis.url, redisClientOptions(250));
        await new Promise<void>((resolve) => c.once('ready', () => resolve()));
        return c;
      };
      api = await connect();
      reader = await connect();
      other = await connect();
      await reader.flushdb();
      rec = recorder(api);
      away.length = 0;
      store = new SqliteStore({ path: ':memory:' });
      await store.migrate();
      await putCalls(store, 3);
      h = await accessHarness(
        store,
        // Read requests are counted in slices of at most an eighth of the limit: a large limit lets the slice
        // follow the use alone.
        { readRequestsPerMinute: 1_000_000 },
        {
          redis: api,
          redisPrefix: prefix,
          logger: { warn: (_fields, message) => away.push(message), info: () => undefined },
        },
      );
      // The first request loads the scripts on the connection (EVAL once, EVALSHA from then on), and starts
      // the lock mirror.
      expect((await h.inject('/v1/me')).statusCode).toBe(200);
      await until(() => h.access.locksMirrored);
    });
    afterEach(async () => {
      rec.hold(false);
      for (const held of rec.held.splice(0)) held.send();
      await h.app.close();
      h.access.close();
      api.disconnect();
      reader.disconnect();
      other.disconnect();
      await store.close();
    });

    it('while the lock mirror is not live, a charge checks the locks on Redis in the same one script as its lease', async () => {
      // A new process: its mirror starts with its first charge.
      await h.rebuild({ readRequestsPerMinute: 1_000_000 });
      const page = await rec.during(() => h.inject('/v1/calls?limit=3', { headers: TEAM }));
      expect(page.result.statusCode).toBe(200);
      expect(page.result.json().data).toHaveLength(3);
      const scripts = page.commands.filter((c) => c.name.startsWith('eval'));
      expect(scripts).toHaveLength(1);
      // The script checked both locks of the address and took from the quota and the items a minute.
      const keys = scripts[0]?.args ?? [];
      expect(keys).toContain(`${prefix}:lock:firewall:192.0.2.10`);
      expect(keys).toContain(`${prefix}:lock:auth:ip:192.0.2.10`);
      expect(keys.some((k) => k.startsWith(`${prefix}:quota:${h.integrationId}:`))).toBe(true);
      expect(keys).toContain(`${prefix}:items:${h.integrationId}`);
    });

    it('a busy key is served from its lease: once its recent use sizes a slice, requests send Redis nothing', async () => {
      const started = performance.now();
      while (performance.now() - started < 3 * LEASE_MS) expect((await h.inject('/v1/me')).statusCode).toBe(200);
      const busy = await rec.during(async () => {
        for (let i = 0; i < 50; i++) expect((await h.inject('/v1/me')).statusCode).toBe(200);
      });
      // At most one new slice for 50 requests (a slice holds half a second of the use just measured).
      expect(busy.commands.filter((c) => c.name.startsWith('eval')).length).toBeLessThanOrEqual(1);
      expect(busy.commands.length).toBeLessThanOrEqual(1);
    });

    it('the unused part of a reservation is given back without the answer waiting for it', async () => {
      rec.hold(true);
      // /teams sets aside 100 items and keeps the 2 it returns; its give-back is held unsent.
      const teams = await rec.during(() => h.inject('/v1/teams'));
      expect(teams.result.statusCode).toBe(200);
      expect(teams.result.headers.ratelimit).toMatch(/^"items-minute";r=1998;/);
      expect(teams.commands.filter((c) => !rec.isGiveBack(c)).map((c) => c.name)).toEqual(['evalsha']);
      expect(rec.held).toHaveLength(1);
      const items = `${prefix}:items:${h.integrationId}`;
      expect(await reader.get(items)).toBe('100');

      rec.hold(false);
      rec.held.splice(0)[0]?.send();
      await until(async () => (await reader.get(items)) === '2');
      expect(await h.access.usage(h.integrationId, [])).toMatchObject({ itemsThisMinute: 2, quotaUsedToday: 2 });
    });

    it('a give-back that fails marks Redis away through the health, never as an unhandled rejection', async () => {
      rec.hold(true);
      expect((await h.inject('/v1/teams')).statusCode).toBe(200);
      expect(rec.held).toHaveLength(1);
      rec.held.splice(0)[0]?.fail(new Error('Connection is closed.'));
      await until(() => away.length === 1);
      expect(away[0]).toMatch(/^redis away/);
      expect(h.access.redisUp).toBe(false);
      // The service keeps answering, from this process's memory.
      expect((await h.inject('/v1/teams')).statusCode).toBe(200);
    });

    it('a lock set by another process refuses a request from the lock mirror, before anything is counted and without a Redis command', async () => {
      const b = new StoreAccessControl({
        store,
        clock: h.clock,
        limits: { ...DEFAULT_LIMITS, authFailuresPerIp: 2, firewallRequestsPerMinute: 2 },
        redis: other,
        redisPrefix: prefix,
      });
      try {
        // Process B counts two failed authentications from the address and locks it.
        for (let i = 0; i < 2; i++)
          await b
            .authenticate({ authorization: undefined, origin: undefined, ip: '192.0.2.10' })
            .catch(() => undefined);
        expect(await reader.get(`${prefix}:lock:auth:ip:192.0.2.10`)).not.toBeNull();
        // The notice reaches this process's mirror when Redis answers B, well within the wait below.
        const locked = await rec.during(async () => {
          let res = await h.inject('/v1/calls?limit=3', { headers: TEAM });
          for (let i = 0; i < 20 && res.statusCode !== 429; i++) {
            await new Promise((resolve) => setTimeout(resolve, 5));
            res = await h.inject('/v1/calls?limit=3', { headers: TEAM });
          }
          return res;
        });
        expect(locked.result.statusCode).toBe(429);
        expect(locked.result.headers['retry-after']).toBe('600');
        expect(locked.result.json().code).toBe('rate_limited');
        const refused = await rec.during(() => h.inject('/v1/calls?limit=3', { headers: TEAM }));
        expect(refused.result.statusCode).toBe(429);
        expect(refused.commands).toEqual([]);
        expect(await reader.get(`${prefix}:items:${h.integrationId}`)).toBeNull();

        // Process B blocks an address that sent three requests without a key: the firewall answers here too.
        for (let i = 0; i < 3; i++) await b.firewallBlocked('192.0.2.11', false);
        await until(async () => (await h.inject('/v1/me', { ip: '192.0.2.11' })).statusCode === 429);
        const blocked = await rec.during(() => h.inject('/v1/me', { ip: '192.0.2.11' }));
        expect(blocked.result.statusCode).toBe(429);
        expect(blocked.result.body).toBe('');
        expect(blocked.result.headers['retry-after']).toBeUndefined();
        expect(blocked.commands).toEqual([]);
      } finally {
        b.close();
      }
    });

    it('a lock that was on Redis before the mirror started is refused by the script, then loaded into the mirror', async () => {
      await reader.set(`${prefix}:lock:auth:ip:192.0.2.12`, String(h.clock.now() + 600_000), 'PX', 600_000);
      await h.rebuild({ readRequestsPerMinute: 1_000_000 });
      const first = await rec.during(() => h.inject('/v1/calls?limit=3', { headers: TEAM, ip: '192.0.2.12' }));
      expect(first.result.statusCode).toBe(429);
      expect(first.result.headers['retry-after']).toBe('600');
      expect(first.commands.filter((c) => c.name.startsWith('eval'))).toHaveLength(1);
      await until(() => h.access.locksMirrored);
      const later = await rec.during(() => h.inject('/v1/calls?limit=3', { headers: TEAM, ip: '192.0.2.12' }));
      expect(later.result.statusCode).toBe(429);
      expect(later.commands).toEqual([]);
      expect(await reader.get(`${prefix}:items:${h.integrationId}`)).toBeNull();
    });
  },
);
