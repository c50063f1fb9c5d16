import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { buildApp } from '../../src/http/app.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { type AccessHarness, accessHarness, type CounterOptions, putPlainRecords } from './http-harness.js';

// The item budget headers (docs/limits.md, "Budget headers"): every successful sync-class answer says what
// the key's items this minute and today hold once its own items are settled, on the memory counters and on
// Redis (REDIS_URL), where a second API process sees the first one's items.

const REDIS_URL = process.env.REDIS_URL;
const TEAM = { 'service-team': 'team_a1' };
const LIMITS = { keyCacheMs: 0, itemsPerMinute: 100, dailyItemQuota: 1000 };
// The harness clock stands at 12:00 UTC: the day resets in 12 hours.
const TO_MIDNIGHT = 43_200;

async function putCalls(store: Store, team: string, count: number): Promise<void> {
  const ids = Array.from({ length: count }, (_, i) => `call_${team.replace('team_', '')}x${i + 1}`);
  await putPlainRecords(store, 'call', team, ids);
}

/** `{ policy: { r, t } }` of a `RateLimit` header, or `{ policy: { q, w } }` of `RateLimit-Policy`. */
function parseList(header: unknown): Record<string, Record<string, number>> {
  expect(typeof header).toBe('string');
  const out: Record<string, Record<string, number>> = {};
  for (const member of (header as string).split(', ')) {
    const [name, ...params] = member.split(';');
    const match = /^"([a-z-]+)"$/.exec(name ?? '');
    expect(match, `policy name of ${member}`).not.toBeNull();
    out[match![1]!] = Object.fromEntries(
      params.map((p) => {
        const [k, v] = p.split('=');
        expect(v).toMatch(/^\d+$/);
        return [k as string, Number(v)];
      }),
    );
  }
  return out;
}

const BACKENDS: { name: string; counters: () => Promise<CounterOptions & { close(): void }> }[] = [
  { name: 'memory', counters: async () => ({ close: () => undefined }) },
];
if (REDIS_URL) {
  BACKENDS.push({
    name: 'redis',
    counters: async () => {
      const redis = new Redis(REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
      await new Promise<void>((resolve, reject) => {
        redis.once('ready', () => resolve());
        redis.once('error', reject);
      });
      return { redis, redisPrefix: `crmxtest:${randomBytes(6).toString('hex')}`, close: () => redis.disconnect() };
    },
  });
} else {
  describe.skip('budget headers [redis] (skipped: set REDIS_URL)', () => {});
}

for (const backend of BACKENDS) {
  describe(`budget headers [${backend.name}]`, () => {
    let store: SqliteStore;
    let h: AccessHarness;
    let counters: CounterOptions & { close(): void };
    beforeEach(async () => {
      store = new SqliteStore({ path: ':memory:' });
      await store.migrate();
      await putCalls(store, 'team_a1', 7);
      counters = await backend.counters();
      const { close: _close, ...options } = counters;
      h = await accessHarness(store, LIMITS, options);
    });
    afterEach(async () => {
      await h.app.close();
      h.access.close();
      counters.close();
      await store.close();
    });

    it('a page says what the minute and the day hold after its own items: the reservation is settled to the real count', async () => {
      // The never-paged /teams sets aside 100 items and keeps the 2 it returns.
      const teams = await h.inject('/v1/teams');
      expect(teams.statusCode).toBe(200);
      expect(teams.json().data).toHaveLength(2);
      expect(parseList(teams.headers['ratelimit-policy'])).toEqual({
        'items-minute': { q: 100, w: 60 },
        'items-day': { q: 1000, w: 86_400 },
      });
      const budget = parseList(teams.headers.ratelimit);
      expect(budget['items-minute']?.r).toBe(98);
      expect(budget['items-minute']?.t).toBeGreaterThanOrEqual(1);
      expect(budget['items-minute']?.t).toBeLessThanOrEqual(60);
      expect(budget['items-day']).toEqual({ r: 998, t: TO_MIDNIGHT });

      // A page of limit=10 holding the team's 7 calls, then a page of 2 with more behind it.
      const first = await h.inject('/v1/calls?limit=10', { headers: TEAM });
      expect(first.json().data).toHaveLength(7);
      expect(parseList(first.headers.ratelimit)['items-minute']?.r).toBe(91);
      const second = await h.inject('/v1/calls?limit=2', { headers: TEAM });
      expect(second.json().has_more).toBe(true);
      const after = parseList(second.headers.ratelimit);
      expect(after['items-minute']?.r).toBe(89);
      expect(after['items-day']).toEqual({ r: 989, t: TO_MIDNIGHT });
      // What the headers say is what the counters hold.
      expect(await h.access.usage(h.integrationId, [])).toMatchObject({ itemsThisMinute: 11, quotaUsedToday: 11 });
    });

    it('the day counts down to 00:00 UTC on the service clock', async () => {
      h.clock.advance(3_600_000 + 500);
      const res = await h.inject('/v1/calls?limit=1', { headers: TEAM });
      expect(parseList(res.headers.ratelimit)['items-day']).toEqual({ r: 999, t: TO_MIDNIGHT - 3600 });
    });

    it('search (not counted toward the quota) names the minute only; read-class answers and refusals carry no budget', async () => {
      const search = await h.app.inject({
        method: 'POST',
        url: '/v1/leads/search',
        headers: { authorization: h.key, 'content-type': 'application/json', ...TEAM },
        payload: { email: 'nobody@example.com', limit: 5 },
      });
      expect(search.statusCode).toBe(200);
      expect(parseList(search.headers['ratelimit-policy'])).toEqual({ 'items-minute': { q: 100, w: 60 } });
      expect(Object.keys(parseList(search.headers.ratelimit))).toEqual(['items-minute']);

      const me = await h.inject('/v1/me');
      expect(me.statusCode).toBe(200);
      expect(me.headers.ratelimit).toBeUndefined();
      expect(me.headers['ratelimit-policy']).toBeUndefined();

      const refused = await h.inject('/v1/calls', { headers: { 'service-team': 'team_solo' } });
      expect(refused.statusCode).toBe(404);
      expect(refused.headers.ratelimit).toBeUndefined();

      // Spend the minute: the 429 keeps its Retry-After and carries no budget header.
      await h.inject('/v1/calls?limit=100', { headers: TEAM });
      await h.inject('/v1/calls?limit=100', { headers: TEAM });
      const limited = await h.inject('/v1/calls?limit=100', { headers: TEAM });
      expect(limited.statusCode).toBe(429);
      expect(limited.headers['retry-after']).toBeDefined();
      expect(limited.headers.ratelimit).toBeUndefined();
    });

    it('the budget headers are extensions: the body and every other header stay as they were', async () => {
      const res = await h.inject('/v1/calls?limit=3', { headers: TEAM });
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers['service-request-id']).toMatch(/^req_/);
      expect(Object.keys(res.json())).toEqual(['object', 'data', 'has_more', 'next_cursor']);
      const extra = Object.keys(res.headers).filter((name) => name.startsWith('ratelimit'));
      expect(extra.sort()).toEqual(['ratelimit', 'ratelimit-policy']);
    });

    if (backend.name === 'redis') {
      it('a second API process on the same Redis reports the items the first one settled', async () => {
        await h.inject('/v1/calls?limit=10', { headers: TEAM });
        const { close: _close, ...options } = counters;
        const limits = { ...DEFAULT_LIMITS, ...LIMITS };
        const access = new StoreAccessControl({ store, clock: h.clock, limits, ...options });
        const other = buildApp({ store, clock: h.clock, limits, access });
        await other.ready();
        try {
          const res = await other.inject({
            method: 'GET',
            url: '/v1/calls?limit=2',
            headers: { authorization: h.key, ...TEAM },
            remoteAddress: '192.0.2.10',
          });
          const budget = parseList(res.headers.ratelimit);
          expect(budget['items-minute']?.r).toBe(91);
          expect(budget['items-day']?.r).toBe(991);
        } finally {
          await other.close();
          access.close();
        }
      });
    }
  });
}
