import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIntegration } from '../../src/access/integrations.js';
import { setApiDisabled } from '../../src/access/switches.js';
import { ManualClock } from '../../src/clock.js';
import { runDemo } from '../../src/demo/run-demo.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { freePort } from '../access/own-redis.js';
import { openSqliteFile } from '../support/sqlite-file.js';
import { opsGet, sample } from './scrape.js';

// The operator listener of a running server (docs/operations.md): counters after known requests, the
// probes, readiness independent of the API switch, readiness failing while migrations are pending, and Redis
// reported (not required) by readiness.

const silent = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, fatal() {}, child: () => silent } as never;

describe('the operator listener of a running server', () => {
  const clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));
  let store: SqliteStore;
  let server: RunningServer;
  let ops: string;
  let key: string;
  let team: string;

  const api = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${server.origin}${path}`, { headers: { authorization: `Bearer ${key}`, 'service-team': team, ...headers } });

  beforeAll(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    const demo = await runDemo(store, { seed: 5, teams: 1, leads: 8, now: clock.now() - 3_600_000, clock });
    team = demo.teams[0] as string;
    key = (await createIntegration(store, clock, { teams: [team], name: 'ops' })).key;
    clock.advance(60_000);
    server = await startServer({
      store,
      host: '127.0.0.1',
      port: 0,
      clock,
      limits: { ...DEFAULT_LIMITS, authFailuresPerIp: 2 },
      logger: silent,
      handleSignals: false,
      feedJobs: false,
      ops: { host: '127.0.0.1', port: 0 },
    });
    ops = server.opsOrigin as string;
  }, 60_000);

  afterAll(async () => {
    await server?.close();
  });

  it('listens on its own port, not on the API port, and answers /livez', async () => {
    expect(ops).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(ops).not.toBe(server.origin);
    expect(await opsGet(ops, '/livez')).toEqual({ status: 200, body: '{"status":"ok"}' });
    expect((await opsGet(ops, '/nothing')).status).toBe(404);
    // The API does not serve the probes or the metrics.
    expect((await fetch(`${server.origin}/metrics`)).status).toBe(404);
  });

  it('counts requests by route template, status and code, items, refusals, limiter decisions, page cache hits and feed read-aheads', async () => {
    // Three pages of the feed: the second and the third were read ahead while the one before was answered.
    for (let page = 0, cursor = ''; page < 3; page++) {
      const response = await api(`/v1/sync/changes?limit=2${cursor}`);
      expect(response.status).toBe(200);
      cursor = `&cursor=${((await response.json()) as { next_cursor: string }).next_cursor}`;
    }
    for (let i = 0; i < 3; i++) expect((await api('/v1/leads?limit=2')).status).toBe(200);
    expect((await api('/v1/me')).status).toBe(200);
    const lead = (await (await api('/v1/leads?limit=1')).json()) as { data: { id: string }[] };
    expect((await api(`/v1/leads/${lead.data[0]?.id}`)).status).toBe(200);
    expect((await api('/v1/leads', { 'service-team': 'nope' })).status).toBe(400);
    // Two failures lock the address (authFailuresPerIp: 2): the third answers 429 (no more keyed calls after).
    for (let i = 0; i < 3; i++) await api('/v1/me', { authorization: 'Bearer crmx_live_wrong' });

    const { status, body } = await opsGet(ops, '/metrics');
    expect(status).toBe(200);
    const ok = { route: '/v1/leads', method: 'GET', status: '200', code: '' };
    expect(sample(body, 'crm_export_http_requests_total', ok)).toBe(4);
    expect(sample(body, 'crm_export_http_requests_total', { route: '/v1/leads/:id', status: '200' })).toBe(1);
    expect(sample(body, 'crm_export_http_requests_total', { route: '/v1/leads', code: 'invalid_request' })).toBe(1);
    expect(sample(body, 'crm_export_http_requests_total', { code: 'invalid_credentials', status: '401' })).toBe(2);
    expect(sample(body, 'crm_export_http_requests_total', { code: 'rate_limited', status: '429' })).toBe(1);
    // No label value is a record id.
    expect(body).not.toContain(lead.data[0]?.id);
    expect(sample(body, 'crm_export_http_request_duration_seconds_count', { route: '/v1/leads' })).toBe(5);
    expect(sample(body, 'crm_export_items_served_total', { route: '/v1/leads' })).toBe(7);
    expect(sample(body, 'crm_export_http_response_bytes_total', { route: '/v1/leads' })).toBeGreaterThan(500);
    expect(sample(body, 'crm_export_refusals_total', { reason: 'invalid_credentials' })).toBe(2);
    expect(sample(body, 'crm_export_refusals_total', { reason: 'auth_lockout' })).toBe(1);
    expect(sample(body, 'crm_export_limiter_decisions_total', { limiter: 'auth_lockout', decision: 'refused' })).toBe(
      1,
    );
    expect(sample(body, 'crm_export_limiter_decisions_total', { limiter: 'rate_sync', decision: 'allowed' })).toBe(7);
    expect(sample(body, 'crm_export_limiter_decisions_total', { limiter: 'rate_read', decision: 'allowed' })).toBe(2);
    expect(sample(body, 'crm_export_page_cache_requests_total', { result: 'hit' })).toBe(2);
    expect(sample(body, 'crm_export_page_cache_hit_bytes_total')).toBeGreaterThan(0);
    expect(sample(body, 'crm_export_page_cache_bytes')).toBeGreaterThan(0);
    expect(sample(body, 'crm_export_feed_read_ahead_total', { outcome: 'used' })).toBe(2);
    expect(sample(body, 'crm_export_feed_read_ahead_total', { outcome: 'stale' })).toBe(0);
    expect(sample(body, 'crm_export_redis_up')).toBe(0);
    // Feed lag: the demo wrote its last change when the clock was a minute behind the server's.
    expect(sample(body, 'crm_export_feed_head_age_seconds', { team })).toBe(60);
    expect(sample(body, 'crm_export_process_cpu_user_seconds_total')).toBeGreaterThan(0);
    // SQLite has no pool.
    expect(sample(body, 'crm_export_db_pool_connections')).toBeUndefined();
  });

  it('stays ready while `admin switches api off` turns /v1/health to 503, and reports Redis as off', async () => {
    expect(await opsGet(ops, '/readyz')).toEqual({
      status: 200,
      body: '{"status":"ready","database":"ok","redis":"off"}',
    });
    await setApiDisabled(store, true);
    clock.advance(DEFAULT_LIMITS.keyCacheMs + 1);
    expect((await fetch(`${server.origin}/v1/health`)).status).toBe(503);
    expect((await opsGet(ops, '/readyz')).status).toBe(200);
    expect((await opsGet(ops, '/livez')).status).toBe(200);
    await setApiDisabled(store, false);
    clock.advance(DEFAULT_LIMITS.keyCacheMs + 1);
    expect((await fetch(`${server.origin}/v1/health`)).status).toBe(200);
  });

  it('answers 503 migrations_pending while the database lacks a migration this code knows, and 200 once applied', async () => {
    const file = openSqliteFile(store.path);
    const row = file.prepare('SELECT name, timestamp FROM kysely_migration ORDER BY name DESC LIMIT 1').get() as {
      name: string;
      timestamp: string;
    };
    file.prepare('DELETE FROM kysely_migration WHERE name = ?').run(row.name);
    expect(await opsGet(ops, '/readyz')).toEqual({
      status: 503,
      body: '{"status":"not_ready","database":"migrations_pending","redis":"off"}',
    });
    file.prepare('INSERT INTO kysely_migration (name, timestamp) VALUES (?, ?)').run(row.name, row.timestamp);
    file.close();
    expect((await opsGet(ops, '/readyz')).status).toBe(200);
  });
});

describe('the operator listener while Redis cannot be reached', () => {
  let store: SqliteStore;
  let server: RunningServer;

  beforeAll(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    // Nothing listens on this port: the limits start "away" (after the 5 s the server gives Redis at start).
    const port = await freePort();
    server = await startServer({
      store,
      host: '127.0.0.1',
      port: 0,
      logger: silent,
      handleSignals: false,
      feedJobs: false,
      redisUrl: `redis://127.0.0.1:${port}`,
      ops: { host: '127.0.0.1', port: 0 },
    });
  }, 30_000);

  afterAll(async () => {
    await server?.close();
  });

  it('stays ready, reports Redis away, and counts the loss of Redis', async () => {
    const ops = server.opsOrigin as string;
    expect(await opsGet(ops, '/readyz')).toEqual({
      status: 200,
      body: '{"status":"ready","database":"ok","redis":"away"}',
    });
    const { body } = await opsGet(ops, '/metrics');
    expect(sample(body, 'crm_export_redis_up')).toBe(0);
    expect(sample(body, 'crm_export_redis_away_total')).toBe(1);
    // The API answers from process memory meanwhile.
    expect((await fetch(`${server.origin}/v1/health`)).status).toBe(200);
  });
});
