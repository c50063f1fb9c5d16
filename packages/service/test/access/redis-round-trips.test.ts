import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { redisClientOptions } from '../../src/access/limits/redis-health.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { type AccessHarness, accessHarness, putPlainRecords } from './http-harness.js';
import { HAS_REDIS_SERVER, type OwnRedis, startOwnRedis } from './own-redis.js';

// What a request sends Redis (docs/limits.md, "One round trip"): every command the API's client sends is
// recorded, and the give-back of an unused reservation can be held back unsent, which shows that the answer
// never waits for it. On a redis-server of the test's own.

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
  `one Redis round trip per request (own redis-server)${HAS_REDIS_SERVER ? '' : ' (skipped: redis-server not on PATH)'}`,
  () => {
    let redis: OwnRedis;
    let store: SqliteStore;
    let api: Redis;
    let reader: Redis;
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
      await reader.flushdb();
      rec = recorder(api);
      away.length = 0;
      store = new SqliteStore({ path: ':memory:' });
      await store.migrate();
      await putCalls(store, 3);
      h = await accessHarness(
        store,
        {},
        {
          redis: api,
          redisPrefix: prefix,
          logger: { warn: (_fields, message) => away.push(message), info: () => undefined },
        },
      );
      // The first request loads the scripts on the connection (EVAL once, EVALSHA from then on).
      expect((await h.inject('/v1/me')).statusCode).toBe(200);
    });
    afterEach(async () => {
      rec.hold(false);
      for (const held of rec.held.splice(0)) held.send();
      await h.app.close();
      h.access.close();
      api.disconnect();
      reader.disconnect();
      await store.close();
    });

    it('a charged request on the hot path sends one command: the firewall block, the address lock, the quota and the rate allowance in one script', async () => {
      const me = await rec.during(() => h.inject('/v1/me'));
      expect(me.result.statusCode).toBe(200);
      expect(me.commands.map((c) => c.name)).toEqual(['evalsha']);

      // A full page keeps everything it set aside: nothing to give back, nothing else sent.
      const page = await rec.during(() => h.inject('/v1/calls?limit=3', { headers: TEAM }));
      expect(page.result.statusCode).toBe(200);
      expect(page.result.json().data).toHaveLength(3);
      expect(page.commands.map((c) => c.name)).toEqual(['evalsha']);
      // The script checked both locks of the address and took from the quota and the items a minute.
      const keys = page.commands[0]?.args ?? [];
      expect(keys).toContain(`${prefix}:lock:firewall:192.0.2.10`);
      expect(keys).toContain(`${prefix}:lock:auth:ip:192.0.2.10`);
      expect(keys.some((k) => k.startsWith(`${prefix}:quota:${h.integrationId}:`))).toBe(true);
      expect(keys).toContain(`${prefix}:items:${h.integrationId}`);
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

    it('a locked address is refused from that same one command, before anything is counted', async () => {
      await reader.set(`${prefix}:lock:auth:ip:192.0.2.10`, String(h.clock.now() + 600_000), 'PX', 600_000);
      const locked = await rec.during(() => h.inject('/v1/calls?limit=3', { headers: TEAM }));
      expect(locked.result.statusCode).toBe(429);
      expect(locked.result.headers['retry-after']).toBe('600');
      expect(locked.result.json().code).toBe('rate_limited');
      expect(locked.commands.map((c) => c.name)).toEqual(['evalsha']);
      expect(await reader.get(`${prefix}:items:${h.integrationId}`)).toBeNull();

      await reader.set(`${prefix}:lock:firewall:192.0.2.10`, String(h.clock.now() + 600_000), 'PX', 600_000);
      const blocked = await rec.during(() => h.inject('/v1/me'));
      expect(blocked.result.statusCode).toBe(429);
      expect(blocked.result.body).toBe('');
      expect(blocked.result.headers['retry-after']).toBeUndefined();
      expect(blocked.commands.map((c) => c.name)).toEqual(['evalsha']);
    });
  },
);
