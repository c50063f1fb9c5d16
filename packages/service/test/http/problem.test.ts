import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors/catalogue.js';
import type { Store } from '../../src/store/store.js';
import { bodyText, expectProblem } from './expect-problem.js';
import { KEY_A, KEY_AB, put, TEAM_A, team } from './fixtures.js';
import { auth, type Harness, harness } from './harness.js';

describe('errors', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness();
    await put(h.store, 'team', team(TEAM_A));
  });
  afterAll(() => h.close());

  it('any GET or POST under /v1/ matching no endpoint gets 404 resource_missing', async () => {
    expectProblem(await h.app.inject({ method: 'GET', url: '/v1/nothing' }), 404, 'resource_missing');
    expectProblem(await h.app.inject({ method: 'POST', url: '/v1/leads' }), 404, 'resource_missing');
    expectProblem(await h.app.inject({ method: 'GET', url: '/v1/leads/lead_x/notes' }), 404, 'resource_missing');
    expectProblem(await h.app.inject({ method: 'GET', url: '/v1/me/', headers: auth(KEY_A) }), 404, 'resource_missing');
  });

  it('every 401 carries WWW-Authenticate: Bearer realm', async () => {
    const missing = await h.app.inject({ method: 'GET', url: '/v1/me' });
    expectProblem(missing, 401, 'invalid_credentials');
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="crm-export"');
    const wrong = await h.app.inject({
      method: 'GET',
      url: '/v1/leads',
      headers: { authorization: 'Bearer crmx_live_nope' },
    });
    expectProblem(wrong, 401, 'invalid_credentials');
    expect(wrong.headers['www-authenticate']).toBe('Bearer realm="crm-export"');
  });

  it('a secret key together with an Origin header gets 400 secret_key_in_browser and no CORS headers', async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: '/v1/me',
      headers: { ...auth(KEY_A), origin: 'https://app.test' },
    });
    expectProblem(res, 400, 'secret_key_in_browser');
    for (const name of Object.keys(res.headers)) expect(name).not.toMatch(/^access-control-/);
  });

  it('the API sends no CORS headers on success either', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/v1/me', headers: auth(KEY_A) });
    expect(res.statusCode).toBe(200);
    for (const name of Object.keys(res.headers)) expect(name).not.toMatch(/^access-control-/);
  });

  it('every 429 the API returns carries Retry-After in whole seconds', async () => {
    h.access.reserveError = new ApiError('rate_limited', { retryAfter: 12.3 });
    try {
      const res = await h.app.inject({ method: 'GET', url: '/v1/teams', headers: auth(KEY_A) });
      expectProblem(res, 429, 'rate_limited');
      expect(res.headers['retry-after']).toBe('13');
    } finally {
      h.access.reserveError = undefined;
    }
  });

  it('an endpoint switched off for every key gets 403 capability_disabled', async () => {
    h.access.switchedOff.set('leads.list', 'capability_disabled');
    try {
      expectProblem(
        await h.app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A) }),
        403,
        'capability_disabled',
      );
    } finally {
      h.access.switchedOff.clear();
    }
  });

  it('a key without the needed scope gets 403 insufficient_scope', async () => {
    const narrow = await harness({
      access: new (await import('./fake-access.js')).FakeAccess([
        { key: KEY_AB, teams: [TEAM_A], scopes: ['teams:read'] },
      ]),
    });
    try {
      expectProblem(
        await narrow.app.inject({ method: 'GET', url: '/v1/calls', headers: auth(KEY_AB) }),
        403,
        'insufficient_scope',
      );
      expect((await narrow.app.inject({ method: 'GET', url: '/v1/members', headers: auth(KEY_AB) })).statusCode).toBe(
        200,
      );
    } finally {
      await narrow.close();
    }
  });

  it('an internal failure gets 500 internal_error and leaks nothing internal', async () => {
    const broken = {
      ...h.store,
      listPage: async () => Promise.reject(new Error('SECRET detail at /srv/db')),
    } as Store;
    const b = await harness({ store: Object.setPrototypeOf(broken, Object.getPrototypeOf(h.store)) });
    const res = await b.app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A) });
    expectProblem(res, 500, 'internal_error');
    expect(bodyText(res)).not.toContain('SECRET');
    expect(b.access.settled.at(-1)?.used).toBe(0);
    await b.app.close();
  });

  it('an unreachable database gets 503 service_unavailable', async () => {
    const down = Object.create(h.store) as Store;
    down.ping = async () =>
      Promise.reject(Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    const d = await harness({ store: down });
    const res = await d.app.inject({ method: 'GET', url: '/v1/health' });
    expectProblem(res, 503, 'service_unavailable');
    expect(bodyText(res)).not.toContain('10.0.0.1');
    await d.app.close();
  });

  it('GET /v1/health answers without a key, with Service-Release and Service-Request-Id', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/v1/health' });
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ object: 'health', status: 'ok' });
    expect(res.headers['service-release']).toMatch(/^crm-export@/);
    expect(res.headers['service-request-id']).toMatch(/^req_/);
  });

  it('an incoming request id header never chooses the request id', async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: '/v1/health',
      headers: { 'request-id': 'req_evil', 'service-request-id': 'x' },
    });
    expect(res.headers['service-request-id']).not.toBe('x');
    expect(res.headers['service-request-id']).toMatch(/^req_[0-9a-f-]{36}$/);
  });
});
