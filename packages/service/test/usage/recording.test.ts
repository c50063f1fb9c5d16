import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIntegration } from '../../src/access/integrations.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { ManualClock } from '../../src/clock.js';
import { runDemo } from '../../src/demo/run-demo.js';
import { buildApp } from '../../src/http/app.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import type { Store } from '../../src/store/store.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import {
  integrationUsage,
  lastUses,
  recentFailures,
  refusalsByReason,
  requestLogPage,
} from '../../src/usage/usage-reads.js';
import { describeEachBackend } from '../support/backends.js';

// Last use, usage counts and the request log (docs/request-log.md), recorded by the real app and access
// control on demo data and read back through usage/usage-reads.ts: the fields of each entry, refusals
// counted by reason, and not one key, cursor or search criterion anywhere in what was stored.

const CLIENT = '192.0.2.44';
const ALLOWED = '198.51.100.7';

describeEachBackend('recording of usage and the request log', (makeStore) => {
  let store: Store;
  let recorder: UsageRecorder;
  const apps: FastifyInstance[] = [];
  let key: string;
  let fencedKey: string;
  let integration: string;
  let fenced: string;
  let keyId: string;
  let team: string;
  const secrets = new Set<string>();
  const clock = new ManualClock(Date.parse('2026-03-01T12:30:00.000Z'));

  const appWith = async (limits: Limits) => {
    const app = buildApp({
      store,
      access: new StoreAccessControl({ store, clock, limits }),
      clock,
      limits,
      logger: false,
      usage: recorder,
    });
    await app.ready();
    apps.push(app);
    return app;
  };

  const send = async (
    app: FastifyInstance,
    url: string,
    options: { key?: string | null; ip?: string; method?: 'GET' | 'POST'; body?: unknown } = {},
  ): Promise<LightMyRequestResponse> => {
    const used = options.key === undefined ? key : options.key;
    const res = await app.inject({
      method: options.method ?? 'GET',
      url,
      remoteAddress: options.ip ?? CLIENT,
      headers: { ...(used === null ? {} : { authorization: `Bearer ${used}` }), 'service-team': team },
      ...(options.body === undefined ? {} : { payload: options.body as object }),
    });
    const cursor = /"next_cursor":"([^"]+)"/.exec(res.body)?.[1];
    if (cursor) secrets.add(cursor);
    return res;
  };

  beforeAll(async () => {
    store = await makeStore();
    const demo = await runDemo(store, { seed: 5, teams: 1, leads: 12, now: clock.now() - 3_600_000, clock });
    team = demo.teams[0] as string;
    const created = await createIntegration(store, clock, { teams: [team], name: 'recorded' });
    key = created.key;
    integration = created.integration.id;
    keyId = created.integration.keys[0]?.id as string;
    const other = await createIntegration(store, clock, { teams: [team], name: 'fenced', allowlist: [ALLOWED] });
    fencedKey = other.key;
    fenced = other.integration.id;
    secrets.add(key);
    secrets.add(fencedKey);
    recorder = new UsageRecorder({ store, clock, limits: { requestLogQueue: 10_000, requestLogFlushMs: 60_000 } });
    const limits = { ...DEFAULT_LIMITS, itemsPerMinute: 50, authFailuresPerIp: 3 };
    const app = await appWith(limits);
    // A second process of the same API with a daily quota of 5 items, for quota_exceeded.
    const stingy = await appWith({ ...limits, dailyItemQuota: 5 });

    expect((await send(app, '/v1/me')).statusCode).toBe(200);
    const leads = await send(app, '/v1/leads?limit=3');
    expect(leads.statusCode, leads.body).toBe(200);
    const page = JSON.parse(leads.body);
    await send(app, `/v1/leads?limit=3&cursor=${page.next_cursor}`);
    const lead = page.data.find((l: { email: string | null }) => l.email);
    secrets.add(lead.email);
    await send(app, '/v1/leads/search', { method: 'POST', body: { email: lead.email } });
    await send(app, `/v1/leads/${lead.id}`);
    const feed = JSON.parse((await send(app, '/v1/sync/changes?limit=4')).body);
    await send(app, `/v1/sync/changes?limit=4&cursor=${feed.next_cursor}`);
    // rate_limited: a page of 100 sets aside the whole minute's 50 items, after 3 + 3 + 4 + 4 were spent.
    expect((await send(app, '/v1/leads?limit=100')).statusCode).toBe(429);
    // quota_exceeded in the stingy process: 3 items, then 3 more pass while under 5, then refused.
    await send(stingy, '/v1/leads?limit=3');
    await send(stingy, '/v1/leads?limit=3');
    expect(JSON.parse((await send(stingy, '/v1/leads?limit=3')).body).code).toBe('quota_exceeded');
    // ip_not_allowed: the fenced integration's key from outside its allowlist.
    expect((await send(app, '/v1/me', { key: fencedKey })).statusCode).toBe(403);
    // invalid_credentials three times with a wrong secret of a real key, then the address is locked out.
    const wrong = `${key.slice(0, -4)}abcd`;
    secrets.add(wrong);
    for (let i = 0; i < 4; i++) await send(app, '/v1/me', { key: wrong, ip: '192.0.2.66' });
    // No key at all, and the health check (nobody's traffic, not recorded).
    await send(app, '/v1/me', { key: null, ip: '192.0.2.67' });
    await send(app, '/v1/health', { key: null });
    await recorder.flush();
  }, 120_000);

  afterAll(async () => {
    for (const app of apps) await app.close();
    await recorder.stop();
    await store.close();
  });

  it('logs each request of an integration with time, request id, endpoint template, status, code, items and address', async () => {
    const { entries } = await requestLogPage(store, { integration, limit: 500 });
    const list = entries.find((e) => e.endpoint === '/v1/leads' && e.status === 200);
    expect(list).toMatchObject({ integration, method: 'GET', code: null, items: 3, address: CLIENT });
    expect(list?.requestId).toMatch(/^req_/);
    // When the request arrived: at most the time it took before now.
    expect(Date.parse(list?.at ?? '')).toBeLessThanOrEqual(clock.now());
    expect(Date.parse(list?.at ?? '')).toBeGreaterThan(clock.now() - 60_000);
    expect(entries.find((e) => e.endpoint === '/v1/leads/:id')).toMatchObject({ status: 200 });
    expect(entries.filter((e) => e.status === 429).map((e) => `${e.endpoint} ${e.code}`)).toEqual([
      '/v1/me rate_limited',
      '/v1/leads quota_exceeded',
      '/v1/leads rate_limited',
    ]);
    // Templates only: no id, no query string.
    for (const e of entries) expect(e.endpoint).toMatch(/^\/v1(\/([a-z_]+|:id))+$/);
    // Newest first, in pages linked by `next`.
    const first = await requestLogPage(store, { integration, limit: 2 });
    const second = await requestLogPage(store, { integration, limit: 2, after: first.next as string });
    expect(first.entries).toEqual(entries.slice(0, 2));
    expect(second.entries).toEqual(entries.slice(2, 4));
  });

  it('names the integration of a refused key, and files a request without one under no integration', async () => {
    const refused = await requestLogPage(store, { integration: fenced });
    expect(refused.entries).toHaveLength(1);
    expect(refused.entries[0]).toMatchObject({ status: 403, code: 'ip_not_allowed', endpoint: '/v1/me' });
    const wrong = await requestLogPage(store, { integration, code: 'invalid_credentials' });
    expect(wrong.entries.map((e) => e.address)).toEqual(['192.0.2.66', '192.0.2.66', '192.0.2.66']);
    const nobody = await requestLogPage(store, { integration: '' });
    expect(nobody.entries.map((e) => e.code)).toEqual(['invalid_credentials']);
    expect((await requestLogPage(store, { integration: null, endpoint: '/v1/health' })).entries).toEqual([]);
  });

  it('stores never a key, a cursor, a search criterion or record content', async () => {
    const { entries } = await requestLogPage(store, { integration: null, limit: 500 });
    const stored = JSON.stringify([entries, await store.usageCounts({ integration: null, sinceHour: 0 })]);
    expect(secrets.size).toBeGreaterThanOrEqual(6);
    for (const secret of secrets) expect(stored).not.toContain(secret);
    expect(stored).not.toContain(keyId);
    expect(stored).not.toContain('"json"');
  });

  it('counts refusals by reason: ip_not_allowed, rate_limited, quota_exceeded, locked_out, invalid_credentials', async () => {
    expect(await refusalsByReason({ store, clock }, integration)).toEqual(
      expect.arrayContaining([
        { reason: 'invalid_credentials', count: 3 },
        { reason: 'locked_out', count: 1 },
        { reason: 'rate_limited', count: 1 },
        { reason: 'quota_exceeded', count: 1 },
      ]),
    );
    expect(await refusalsByReason({ store, clock }, fenced)).toEqual([{ reason: 'ip_not_allowed', count: 1 }]);
    const failures = await recentFailures({ store, clock }, integration);
    const wrong = await requestLogPage(store, { integration, code: 'invalid_credentials' });
    expect(failures).toContainEqual({
      code: 'invalid_credentials',
      endpoint: '/v1/me',
      count: 3,
      lastAt: wrong.entries
        .map((e) => e.at)
        .sort()
        .at(-1),
    });
  });

  it('reports usage against the limits, items per hour for the last day, and last use with its address', async () => {
    const access = new StoreAccessControl({ store, clock, limits: DEFAULT_LIMITS });
    const usage = await integrationUsage(
      { store, clock, limits: DEFAULT_LIMITS, counters: access, recorder },
      integration,
      [keyId],
    );
    // The items of every answer the log holds, added up by the usage counts.
    const { entries } = await requestLogPage(store, { integration, limit: 500 });
    const items = entries.reduce((sum, e) => sum + e.items, 0);
    expect(items).toBeGreaterThan(6);
    expect(usage.today).toMatchObject({ recorded: items, quota: DEFAULT_LIMITS.dailyItemQuota, day: '2026-03-01' });
    expect(usage.itemsPerHour).toHaveLength(24);
    expect(usage.itemsPerHour.at(-1)).toMatchObject({
      hour: '2026-03-01T12:00:00.000Z',
      items,
      requests: entries.length,
      failed: entries.filter((e) => e.status >= 400).length,
    });
    expect(usage.itemsPerHour.slice(0, -1).every((h) => h.requests === 0)).toBe(true);
    expect(usage.refusals[0]).toEqual({ reason: 'invalid_credentials', count: 3 });
    expect(usage.recording).toMatchObject({ enabled: true, dropped: 0, flushes: 1 });
    expect(usage.minute.limit).toBe(DEFAULT_LIMITS.itemsPerMinute);
    // The newest request the key authenticated: every one from CLIENT (the wrong secret came from elsewhere).
    const at = entries
      .filter((e) => e.address === CLIENT)
      .map((e) => e.at)
      .sort()
      .at(-1);
    expect(await lastUses(store, 'integration', [integration, fenced])).toEqual({
      [integration]: { at, address: CLIENT },
    });
    expect(await lastUses(store, 'key', [keyId])).toEqual({ [keyId]: { at, address: CLIENT } });
  });
});

describe('the limiter counters in usage', () => {
  it('reads items this minute and today from the counters the charge used', async () => {
    const { SqliteStore } = await import('../../src/store/sqlite/sqlite-store.js');
    const store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    const clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));
    const access = new StoreAccessControl({ store, clock, limits: DEFAULT_LIMITS });
    const principal = {
      integrationId: 'int_x',
      keyId: 'k',
      name: 'x',
      livemode: true,
      last4: 'abcd',
      teams: [],
      scopes: [],
    };
    const reservation = await access.reserve(principal, 'sync', 100, true);
    await reservation.settle(7);
    const usage = await integrationUsage({ store, clock, limits: DEFAULT_LIMITS, counters: access }, 'int_x');
    expect(usage.minute.items).toBe(7);
    expect(usage.today.items).toBe(7);
    expect(usage.countersShared).toBe(false);
    expect(usage.recording.enabled).toBe(false);
    await store.close();
  });
});
