import { Writable } from 'node:stream';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createIntegration } from '../../src/access/integrations.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { ManualClock } from '../../src/clock.js';
import { runDemo } from '../../src/demo/run-demo.js';
import { buildApp } from '../../src/http/app.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { createLogger } from '../../src/server.js';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';

// The request log (docs/operations.md): the real logger configuration writing to a buffer, the real access
// control and app on demo data, and every endpoint called with good and bad keys, lockouts, firewall
// refusals, searches by email and phone and feed cursors. Then: one line per request with its fields, and
// not one key, cursor, search value or personal detail of the demo data anywhere in the log.

const PROXY = '10.9.8.7';
const CLIENT = '192.0.2.44';

const PERSONAL_KEYS = /^(name|surname|display_name|first_name|last_name|email|phone)$/;

/** Every string under a key that names a person or a contact, anywhere in a parsed body. */
function personalValues(value: unknown, into: Set<string>): void {
  if (Array.isArray(value)) for (const item of value) personalValues(item, into);
  else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (typeof inner === 'string' && PERSONAL_KEYS.test(key) && inner.length >= 5) into.add(inner);
      else personalValues(inner, into);
    }
  }
}

describeEachBackend('the request log', (makeStore) => {
  let store: Store;
  let app: FastifyInstance;
  let key: string;
  let integrationId: string;
  let teams: string[];
  const lines: string[] = [];
  const secrets = new Set<string>();
  const personal = new Set<string>();
  const sent: { method: string; url: string; status: number }[] = [];
  const clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));

  const send = async (
    method: 'GET' | 'POST' | 'PUT',
    url: string,
    options: { key?: string | null; team?: string; ip?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<LightMyRequestResponse> => {
    const usedKey = options.key === undefined ? key : options.key;
    const res = await app.inject({
      method,
      url,
      remoteAddress: options.ip ?? CLIENT,
      headers: {
        ...(usedKey === null ? {} : { authorization: `Bearer ${usedKey}` }),
        ...(options.team ? { 'service-team': options.team } : {}),
        ...options.headers,
      },
      ...(options.body === undefined ? {} : { payload: options.body as object }),
    });
    sent.push({ method, url, status: res.statusCode });
    if (res.headers['content-type']?.toString().startsWith('application/json')) {
      const body = JSON.parse(res.body);
      personalValues(body, personal);
      if (typeof body.next_cursor === 'string') secrets.add(body.next_cursor);
    }
    return res;
  };

  beforeAll(async () => {
    store = await makeStore();
    const demo = await runDemo(store, { seed: 11, teams: 2, leads: 12, now: clock.now() - 3_600_000, clock });
    teams = demo.teams;
    const created = await createIntegration(store, clock, { teams, name: 'log-test' });
    key = created.key;
    integrationId = created.integration.id;
    secrets.add(key);
    clock.advance(60_000);
    const limits = {
      ...DEFAULT_LIMITS,
      itemsPerMinute: 1_000_000,
      readRequestsPerMinute: 1_000_000,
      authFailuresPerIp: 3,
      firewallRequestsPerMinute: 6,
    };
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    app = buildApp({
      store,
      access: new StoreAccessControl({ store, clock, limits }),
      clock,
      limits,
      logger: createLogger('info', sink),
      trustProxy: { addresses: [PROXY] },
    });
    await app.ready();

    const team = teams[0] as string;
    await send('GET', '/v1/health', { key: null });
    await send('GET', '/v1/me');
    await send('GET', '/v1/teams');
    await send('GET', `/v1/teams/${team}`);
    for (const list of ['members', 'booking_services', 'boards', 'calls', 'conversations', 'bookings']) {
      const paged = !['members', 'booking_services'].includes(list);
      const res = await send('GET', `/v1/${list}${paged ? '?limit=2' : ''}`, { team });
      expect(res.statusCode, res.body).toBe(200);
      const page = JSON.parse(res.body);
      if (page.next_cursor) await send('GET', `/v1/${list}?limit=2&cursor=${page.next_cursor}`, { team });
      const first = page.data[0];
      if (first && ['calls', 'conversations', 'bookings'].includes(list)) await send('GET', `/v1/${list}/${first.id}`);
    }
    const leads = JSON.parse((await send('GET', '/v1/leads?limit=3', { team })).body);
    await send('GET', `/v1/leads?limit=3&cursor=${leads.next_cursor}`, { team });
    const lead = leads.data.find((l: { email: string | null; phone: string | null }) => l.email && l.phone);
    expect(lead, 'a demo lead with an email and a phone').toBeDefined();
    await send('GET', `/v1/leads/${lead.id}`);
    await send('GET', `/v1/leads/${lead.id}/activities?limit=2`);
    secrets.add(lead.email);
    secrets.add(lead.phone);
    await send('POST', '/v1/leads/search', { team, body: { email: lead.email } });
    await send('POST', '/v1/leads/search', { team, body: { phone: lead.phone } });
    // A feed walked with its cursors, and a request forwarded by a trusted proxy with its own request id.
    let cursor: string | undefined;
    for (let i = 0; i < 3; i++) {
      const page = JSON.parse(
        (await send('GET', `/v1/sync/changes?limit=5${cursor ? `&cursor=${cursor}` : ''}`, { team })).body,
      );
      cursor = page.next_cursor;
      secrets.add(page.next_cursor);
    }
    await send('GET', '/v1/me', { ip: PROXY, headers: { 'x-request-id': 'edge-4711', 'x-forwarded-for': CLIENT } });
    await send('GET', '/v1/me', { headers: { 'x-request-id': 'forged-by-client' } });
    // Errors: a problem body, bad keys up to a lockout, the firewall's refusals and its budget.
    await send('GET', '/v1/leads');
    const wrong = `${key.slice(0, -4)}abcd`;
    secrets.add(wrong);
    for (let i = 0; i < 4; i++) await send('GET', '/v1/me', { key: wrong, ip: '192.0.2.66' });
    await send('GET', '/v1/me', { key: 'not-a-key', ip: '192.0.2.67' });
    await send('PUT', '/v1/me');
    await send('GET', `/v1/leads?email=${encodeURIComponent(lead.email)}`, { team, body: { email: lead.email } });
    for (let i = 0; i < 8; i++) await send('GET', '/v1/health', { key: null, ip: '192.0.2.99' });
  }, 120_000);

  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const entries = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  const requestLines = () => entries().filter((e) => e.msg === 'request' || e.msg === 'request refused');

  it('writes one line per request with its id, method, route template, status, code, time, integration, team, items and bytes', () => {
    const logged = requestLines();
    expect(logged).toHaveLength(sent.length);
    for (const [i, line] of logged.entries()) {
      expect(line.method).toBe(sent[i]?.method);
      expect(line.status).toBe(sent[i]?.status);
      expect(line.request_id).toMatch(/^req_/);
      expect(typeof line.ms).toBe('number');
      expect(typeof line.items).toBe('number');
      expect(typeof line.bytes).toBe('number');
      expect(line).toHaveProperty('code');
      expect(line).toHaveProperty('integration');
      expect(line).toHaveProperty('team');
      // A template or "unmatched": never an id or a query string.
      expect(String(line.route)).toMatch(/^(unmatched|\/v1(\/([a-z_]+|:id))+)$/);
    }
    const leadsPage = logged.find((l) => l.route === '/v1/leads' && l.status === 200);
    expect(leadsPage).toMatchObject({ level: 30, team: teams[0], items: 3, code: null });
    expect(leadsPage?.integration).toBe(integrationId);
    expect(leadsPage?.bytes).toBeGreaterThan(100);
    // A single record counts no items (they count toward the quota only in lists and the feed).
    expect(logged.find((l) => l.route === '/v1/leads/:id')).toMatchObject({ team: teams[0], items: 0, status: 200 });
    expect(logged.find((l) => l.status === 400)).toMatchObject({ route: '/v1/leads', code: 'team_required' });
    const routes = new Set(logged.map((l) => `${l.method} ${l.route}`));
    for (const route of [
      'GET /v1/health',
      'GET /v1/teams/:id',
      'POST /v1/leads/search',
      'GET /v1/leads/:id/activities',
      'GET /v1/calls/:id',
      'GET /v1/sync/changes',
    ]) {
      expect(routes).toContain(route);
    }
  });

  it("keeps a trusted proxy's X-Request-Id and ignores one a client sends directly", () => {
    const withUpstream = requestLines().filter((l) => 'upstream_request_id' in l);
    expect(withUpstream).toHaveLength(1);
    expect(withUpstream[0]).toMatchObject({ upstream_request_id: 'edge-4711', route: '/v1/me', status: 200 });
    expect(lines.join('\n')).not.toContain('forged-by-client');
  });

  it('writes failed authentications, lockouts and firewall refusals at warn with the reason and the client address', () => {
    const warns = requestLines().filter((l) => l.level === 40);
    const reasons = warns.map((l) => `${l.reason} ${l.client} ${l.status}`);
    expect(reasons).toContain('invalid_credentials 192.0.2.66 401');
    expect(reasons).toContain('auth_lockout 192.0.2.66 429');
    expect(reasons).toContain('invalid_credentials 192.0.2.67 401');
    expect(reasons).toContain(`firewall_method_or_path ${CLIENT} 404`);
    expect(reasons).toContain(`firewall_body_not_allowed ${CLIENT} 403`);
    expect(reasons).toContain('firewall_budget 192.0.2.99 429');
    // Requests that were not refused say nothing of the client's address.
    expect(requestLines().filter((l) => l.level === 30 && 'client' in l)).toEqual([]);
  });

  it('never writes a key, a cursor, a search value or a name, email or phone of the data served', () => {
    const log = lines.join('\n');
    expect(personal.size).toBeGreaterThan(20);
    for (const secret of secrets) expect(log, 'a key, cursor or search value').not.toContain(secret);
    for (const value of personal) expect(log, `personal data: ${value}`).not.toContain(value);
    expect(log).not.toMatch(/crmx_(live|test)_/);
    expect(log).not.toMatch(/[\w.+-]+@[\w-]+\.[a-z]{2,}/i);
  });
});
