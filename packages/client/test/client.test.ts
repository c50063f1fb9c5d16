import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { autoPage } from '../src/client/auto-page.js';
import { CrmExportClient } from '../src/client/crm-export-client.js';
import {
  AuthenticationError,
  ConflictError,
  ConnectionError,
  FirewallError,
  InvalidRequestError,
  NotFoundError,
  PagingLimitError,
  PermissionError,
  RateLimitError,
  ServerError,
} from '../src/client/errors.js';
import { ROUTE_NAMES, ROUTES } from '../src/client/routes.js';
import { type FakeServer, leadObject, startFakeServer } from './support/fake-server.js';

let fake: FakeServer;
let sleeps: number[];

function client(extra: Partial<ConstructorParameters<typeof CrmExportClient>[0]> = {}) {
  return new CrmExportClient({
    baseUrl: fake.url,
    key: fake.key,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 0.5,
    ...extra,
  });
}
const changesCalls = () => fake.requests.filter((r) => r.path === '/sync/changes').length;

beforeEach(async () => {
  fake = await startFakeServer(['team_a']);
  sleeps = [];
});
afterEach(() => fake.close());

describe('client: routes and typed methods', () => {
  it('declares every endpoint of the spec as {method, path, kind}', () => {
    expect(ROUTE_NAMES.sort()).toEqual(
      [
        'me',
        'teams',
        'team',
        'members',
        'boards',
        'bookingServices',
        'leads',
        'lead',
        'searchLeads',
        'leadActivities',
        'calls',
        'call',
        'conversations',
        'conversation',
        'bookings',
        'booking',
        'changes',
        'health',
      ].sort(),
    );
    expect(ROUTES.searchLeads.method).toBe('POST');
    expect(Object.values(ROUTES).filter((r) => r.method === 'POST')).toHaveLength(1);
    const c = client();
    for (const name of ROUTE_NAMES) expect(typeof (c as unknown as Record<string, unknown>)[name]).toBe('function');
  });

  it('sends Service-Team on team-bound endpoints only; /me and /teams never take it', async () => {
    const c = client({ team: 'team_a' });
    await c.me();
    await c.teams();
    await c.members();
    await c.changes({ limit: 10 });
    const seen = Object.fromEntries(fake.requests.map((r) => [r.path, r.team]));
    expect(seen).toEqual({ '/me': undefined, '/teams': undefined, '/members': 'team_a', '/sync/changes': 'team_a' });
  });

  it('forTeam gives one client per team of a multi-team key', async () => {
    fake.addTeam('team_b');
    const base = client();
    await expect(base.members()).rejects.toBeInstanceOf(InvalidRequestError);
    await base.forTeam('team_b').members();
    expect(fake.requests.at(-1)?.team).toBe('team_b');
  });

  it('tolerates unknown enum values and unknown feed kinds (kept as delivered)', async () => {
    fake.put('team_a', 'lead', leadObject('lead_1', { status: 'brand_new_status' }));
    fake.push('team_a', { kind: 'invoice', id: 'inv_1', version: 1, object: { id: 'inv_1' } });
    const page = await client().changes({ limit: 100 });
    expect(page.data.map((i) => i.kind)).toEqual(['lead', 'invoice']);
    expect((page.data[0] as { object: { status: string } }).object.status).toBe('brand_new_status');
  });
});

describe("client: retries exactly as the spec's error table says", () => {
  it('waits Retry-After on 429 rate_limited and 429 quota_exceeded, then retries', async () => {
    fake.inject('/sync/changes', { status: 429, code: 'rate_limited', headers: { 'retry-after': '7' } });
    fake.inject('/sync/changes', { status: 429, code: 'quota_exceeded', headers: { 'retry-after': '3' } });
    const page = await client().changes();
    expect(page.object).toBe('list');
    expect(sleeps).toEqual([7000, 3000]);
    expect(changesCalls()).toBe(3);
  });

  it('retries 500 and 503 with exponential backoff and jitter', async () => {
    fake.inject('/sync/changes', { status: 500, code: 'internal_error' });
    fake.inject('/sync/changes', { status: 503, code: 'api_disabled' });
    fake.inject('/sync/changes', { status: 503, code: 'service_unavailable' });
    const jitters = [0, 0.99, 0.5];
    const c = client({ random: () => jitters.shift() ?? 0 });
    await c.changes();
    // equal jitter: step/2 + random * step/2, step doubling from 500 ms
    expect(sleeps).toEqual([250, 995, 1500]);
  });

  it('503 service_unavailable with Retry-After waits at least Retry-After, then backs off exponentially from there', async () => {
    fake.inject('/sync/changes', { status: 503, code: 'service_unavailable', headers: { 'retry-after': '2' } });
    fake.inject('/sync/changes', { status: 503, code: 'service_unavailable', headers: { 'retry-after': '1' } });
    fake.inject('/sync/changes', { status: 503, code: 'service_unavailable', headers: { 'retry-after': '1' } });
    fake.inject('/sync/changes', { status: 503, code: 'service_unavailable', headers: { 'retry-after': '1' } });
    const c = client({ random: () => 0.99 });
    await c.changes();
    // Retry-After (2 s, then 1 s) is longer than the first two backoff steps (498, 995 ms); from the third step
    // on (1990, 3980 ms) the backoff is the longer wait.
    expect(sleeps).toEqual([2000, 1000, 1990, 3980]);
    expect(changesCalls()).toBe(5);
  });

  it('a 503 whose Retry-After is longer than the client will sleep reaches the caller', async () => {
    fake.inject('/sync/changes', { status: 503, code: 'service_unavailable', headers: { 'retry-after': '600' } });
    await expect(client().changes()).rejects.toBeInstanceOf(ServerError);
    expect(sleeps).toEqual([]);
  });

  it("retries the firewall's plain 429 (no JSON, no Retry-After) with backoff, recognised as FirewallError", async () => {
    fake.inject('/teams', { status: 429, raw: '<html>Too Many Requests</html>' });
    const errors: unknown[] = [];
    await client({ onRetry: (i) => errors.push(i.error) }).teams();
    expect(errors[0]).toBeInstanceOf(FirewallError);
    expect(sleeps).toEqual([375]);
  });

  it('never retries other 4xx', async () => {
    const cases = [
      [400, 'invalid_request', InvalidRequestError],
      [400, 'team_required', InvalidRequestError],
      [401, 'invalid_credentials', AuthenticationError],
      [401, 'key_expired', AuthenticationError],
      [403, 'team_state_restricted', PermissionError],
      [404, 'team_not_accessible', NotFoundError],
      [409, 'resync_required', ConflictError],
      [409, 'capture_not_ready', ConflictError],
      [410, 'sync_cursor_expired', ConflictError],
    ] as const;
    for (const [status, code, cls] of cases) {
      fake.inject('/sync/changes', { status, code });
      const before = changesCalls();
      const err = await client()
        .changes()
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(cls);
      expect((err as ConflictError).code).toBe(code);
      expect((err as ConflictError).requestId).toMatch(/^req_/);
      expect(changesCalls() - before).toBe(1);
    }
    expect(sleeps).toEqual([]);
  });

  it("recognises the firewall's non-JSON 404 and 403 as FirewallError and does not retry them", async () => {
    fake.inject('/teams', { status: 404, raw: 'Not Found' });
    fake.inject('/me', { status: 403, raw: 'Forbidden' });
    await expect(client().teams()).rejects.toBeInstanceOf(FirewallError);
    await expect(client().me()).rejects.toBeInstanceOf(FirewallError);
    expect(sleeps).toEqual([]);
  });

  it('handles an unknown error code by its HTTP status', async () => {
    fake.inject('/sync/changes', { status: 403, code: 'brand_new_refusal' });
    fake.inject('/me', { status: 409, code: 'brand_new_conflict' });
    fake.inject('/teams', { status: 503, code: 'brand_new_outage' });
    const e1 = await client()
      .changes()
      .catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(PermissionError);
    expect((e1 as PermissionError).code).toBe('brand_new_refusal');
    await expect(client().me()).rejects.toBeInstanceOf(ConflictError);
    await client().teams(); // 503 with an unknown code is still retried with backoff
    expect(sleeps).toHaveLength(1);
  });

  it('a Retry-After longer than the client waits is handed to the caller as RateLimitError', async () => {
    fake.inject('/sync/changes', { status: 429, code: 'quota_exceeded', headers: { 'retry-after': '3600' } });
    const err = await client()
      .changes()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfter).toBe(3600);
    expect(sleeps).toEqual([]);
  });

  it('gives up after maxRetries and throws the last error', async () => {
    for (let i = 0; i < 4; i++) fake.inject('/sync/changes', { status: 500, code: 'internal_error' });
    await expect(client({ retry: { maxRetries: 2 } }).changes()).rejects.toBeInstanceOf(ServerError);
    expect(changesCalls()).toBe(3);
  });

  it('retries a cut connection (the same cursor asks for the same page)', async () => {
    fake.inject('/sync/changes', { status: 0, cut: true });
    await client().changes();
    expect(changesCalls()).toBe(2);
    expect(sleeps).toHaveLength(1);
  });

  it('aborts a request after the timeout and reports a ConnectionError', async () => {
    const silent = createServer(() => {
      // never answers
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    const c = new CrmExportClient({
      baseUrl: `http://127.0.0.1:${port}/v1`,
      key: 'k',
      timeoutMs: 100,
      retry: { maxRetries: 0 },
    });
    const started = Date.now();
    const err = await c.me().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect(String((err as Error).message)).toContain('timed out');
    expect(Date.now() - started).toBeLessThan(2000);
    silent.closeAllConnections();
    silent.close();
  });
});

describe('client: auto-paging', () => {
  const pages = (sizes: number[], hasMoreOnLast = false) => {
    let n = 0;
    return async (cursor: string | undefined) => {
      const i = cursor ? Number(cursor) : 0;
      n++;
      const size = sizes[i] ?? 0;
      return {
        object: 'list' as const,
        data: Array.from({ length: size }, (_, k) => `${i}-${k}`),
        has_more: i < sizes.length - 1 || hasMoreOnLast,
        next_cursor: String(i + 1),
        calls: n,
      };
    };
  };

  it('follows has_more even when a page holds fewer items than asked', async () => {
    const items: string[] = [];
    for await (const x of autoPage(pages([3, 0, 1, 2]), 100)) items.push(x);
    expect(items).toEqual(['0-0', '0-1', '0-2', '2-0', '3-0', '3-1']);
  });

  it('stops at the hard cap of pages with PagingLimitError', async () => {
    const items: string[] = [];
    const run = async () => {
      for await (const x of autoPage(pages([1, 1, 1], true), 5)) items.push(x);
    };
    await expect(run()).rejects.toBeInstanceOf(PagingLimitError);
    expect(items).toHaveLength(3);
  });
});
