import { afterEach, expect, it } from 'vitest';
import { createIntegration } from '../../src/access/integrations.js';
import { listOperatorTokens, revokeOperatorToken } from '../../src/access/operator-tokens.js';
import type { App } from '../../src/http/context.js';
import type { InternalSurface } from '../../src/http/internal-surface.js';
// The request fields the internal app adds (request.operator), for the type checker.
import type {} from '../../src/http/request-fields.js';
import { bodyPath, buildInternalApp } from '../../src/internal/internal-app.js';
import type { Store } from '../../src/store/store.js';
import { seedOrganization, seedTeam } from '../access/fixtures.js';
import { describeEachBackend } from '../support/backends.js';
import { type InternalHarness, internalHarness } from './internal-harness.js';

// The internal listener's app and its operator tokens (issues 27 and 28): a route names the scope it needs;
// the Bearer token is checked before the body; refusals are problem+json.

/** A surface with one route per scope, each answering the token's name and scopes. */
const probe: InternalSurface = {
  prefix: '/manage/v1',
  register(app: App) {
    for (const scope of ['read', 'keys', 'operate', 'intake'] as const) {
      app.post(`/${scope}`, { config: { operatorScope: scope } }, async (request) => ({
        name: request.operator?.name,
        scopes: request.operator?.scopes,
      }));
    }
    app.get('/open', { config: { operatorScope: 'none' } }, async (request) => ({ operator: request.operator }));
  },
};

describeEachBackend('internal listener: operator tokens', (makeStore) => {
  let store: Store;
  let h: InternalHarness;
  afterEach(async () => {
    await h?.close();
    await store?.close();
  });
  const start = async (limits = {}) => {
    store = await makeStore();
    h = await internalHarness(store, [probe], limits);
  };

  it('a missing token is 401 invalid_token, problem+json with WWW-Authenticate', async () => {
    await start();
    const res = await h.inject({ method: 'POST', url: '/manage/v1/read' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer /);
    expect(res.json()).toMatchObject({ code: 'invalid_token', status: 401 });
  });

  it('a wrong token (right shape, wrong secret) is 401 invalid_token and never echoes the token', async () => {
    await start();
    const good = await h.token('crm-settings', ['read']);
    const wrong = `${good.slice(0, -4)}${good.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const res = await h.inject({ method: 'POST', url: '/manage/v1/read', token: wrong });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('invalid_token');
    expect(res.body).not.toContain(wrong);
  });

  it('an API key presented as an operator token is 401 api_key_not_token', async () => {
    await start();
    await seedOrganization(store, 'org_a');
    await seedTeam(store, 'team_a1', { organization: 'org_a' });
    const { key } = await createIntegration(store, h.clock, { teams: ['team_a1'], name: 'Reader' });
    const res = await h.inject({ method: 'POST', url: '/manage/v1/intake', token: key });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('api_key_not_token');
  });

  it('a token without the route scope is 403 insufficient_scope; with it the route sees its name and scopes', async () => {
    await start();
    const reader = await h.token('reader', ['read']);
    const refused = await h.inject({ method: 'POST', url: '/manage/v1/keys', token: reader });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('insufficient_scope');
    const ok = await h.inject({ method: 'POST', url: '/manage/v1/read', token: reader });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ name: 'reader', scopes: ['read'] });
  });

  it('each scope opens its routes only: intake, read, keys, operate', async () => {
    await start();
    const intake = await h.token('relay', ['intake']);
    const admin = await h.token('settings-page', ['read', 'keys', 'operate']);
    const status = async (scope: string, token: string) =>
      (await h.inject({ method: 'POST', url: `/manage/v1/${scope}`, token })).statusCode;
    expect(await status('intake', intake)).toBe(200);
    for (const scope of ['read', 'keys', 'operate']) expect(await status(scope, intake)).toBe(403);
    expect(await status('intake', admin)).toBe(403);
    for (const scope of ['read', 'keys', 'operate']) expect(await status(scope, admin)).toBe(200);
  });

  it('a revoked token is refused with 401 invalid_token', async () => {
    await start({ keyCacheMs: 1 });
    const token = await h.token('old', ['read']);
    expect((await h.inject({ method: 'POST', url: '/manage/v1/read', token })).statusCode).toBe(200);
    await revokeOperatorToken(store, h.clock, 'old');
    const res = await h.inject({ method: 'POST', url: '/manage/v1/read', token });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('invalid_token');
  });

  it('failures lock the address out like API keys: 429 rate_limited with Retry-After, even for a good token', async () => {
    await start({ authFailuresPerIp: 3, authLockSeconds: 60 });
    const good = await h.token('ops', ['read']);
    for (let i = 0; i < 3; i++) {
      const res = await h.inject({ method: 'POST', url: '/manage/v1/read', token: 'cxo_nonsense', ip: '10.9.9.9' });
      expect(res.statusCode).toBe(401);
    }
    const locked = await h.inject({ method: 'POST', url: '/manage/v1/read', token: good, ip: '10.9.9.9' });
    expect(locked.statusCode).toBe(429);
    expect(locked.json().code).toBe('rate_limited');
    expect(locked.headers['retry-after']).toBe('60');
    // Another address is not locked.
    expect((await h.inject({ method: 'POST', url: '/manage/v1/read', token: good, ip: '10.9.9.8' })).statusCode).toBe(
      200,
    );
    h.clock.advance(61_000);
    expect((await h.inject({ method: 'POST', url: '/manage/v1/read', token: good, ip: '10.9.9.9' })).statusCode).toBe(
      200,
    );
  });

  it('wrong secrets for one token lock that token: its wrong secrets then get 429 from any address', async () => {
    await start({ authFailuresPerKey: 2, authFailuresPerIp: 1000 });
    const good = await h.token('ops', ['read']);
    const wrong = `${good.slice(0, -1)}${good.endsWith('A') ? 'B' : 'A'}`;
    for (const ip of ['10.0.0.1', '10.0.0.2']) {
      expect((await h.inject({ method: 'POST', url: '/manage/v1/read', token: wrong, ip })).statusCode).toBe(401);
    }
    const res = await h.inject({ method: 'POST', url: '/manage/v1/read', token: wrong, ip: '10.0.0.3' });
    expect(res.statusCode).toBe(429);
    // The genuine token still works.
    expect((await h.inject({ method: 'POST', url: '/manage/v1/read', token: good, ip: '10.0.0.4' })).statusCode).toBe(
      200,
    );
  });

  it('last use (time and address) is recorded, at most once a minute per token, not once per request', async () => {
    await start();
    const token = await h.token('relay', ['intake']);
    const writes: string[] = [];
    const write = store.write.bind(store);
    store.write = ((fn: Parameters<Store['write']>[0]) => {
      writes.push('write');
      return write(fn);
    }) as Store['write'];
    for (let i = 0; i < 5; i++) await h.inject({ method: 'POST', url: '/manage/v1/intake', token, ip: '10.4.4.4' });
    await h.tokens.settle();
    expect(writes).toHaveLength(1);
    const [listed] = await listOperatorTokens(store);
    expect(listed).toMatchObject({ name: 'relay', lastUsedFrom: '10.4.4.4', lastUsedAt: '2026-01-15T09:00:00.000Z' });
    h.clock.advance(61_000);
    await h.inject({ method: 'POST', url: '/manage/v1/intake', token, ip: '10.5.5.5' });
    await h.tokens.settle();
    expect(writes).toHaveLength(2);
    expect((await listOperatorTokens(store))[0]?.lastUsedFrom).toBe('10.5.5.5');
  });

  it('a route that declares no scope is refused when the app starts', async () => {
    store = await makeStore();
    const broken: InternalSurface = {
      prefix: '/console',
      register(app) {
        app.get('/page', async () => 'hello');
      },
    };
    h = await internalHarness(store, []);
    const app = buildInternalApp({
      store,
      clock: h.clock,
      limits: (await import('../../src/limits.js')).DEFAULT_LIMITS,
      tokens: h.tokens,
      surfaces: [broken],
    });
    await expect(app.ready()).rejects.toThrow(/declares no config.operatorScope/);
  });

  it('an unknown path is 404 resource_missing as problem+json; a route with scope none is open', async () => {
    await start();
    const missing = await h.inject({ url: '/manage/v1/nothing-here' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('resource_missing');
    const open = await h.inject({ url: '/manage/v1/open' });
    expect(open.statusCode).toBe(200);
    expect(open.json()).toEqual({ operator: null });
  });
});

it('a validation failure names the body field as the client wrote it: events[3].lead', () => {
  expect(bodyPath('/events/3', 'lead')).toBe('events[3].lead');
  expect(bodyPath('/events/3/lead')).toBe('events[3].lead');
  expect(bodyPath('', 'source')).toBe('source');
  expect(bodyPath('')).toBeUndefined();
});
