import { afterEach, expect, it } from 'vitest';
import { OperatorTokenAuth } from '../../src/access/operator-tokens.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { consoleSurface } from '../../src/console/console-surface.js';
import { SESSION_COOKIE } from '../../src/console/sessions.js';
import { buildInternalApp } from '../../src/internal/internal-app.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import type { Store } from '../../src/store/store.js';
import { runCommand } from '../../src/write/commands/commands.js';
import type { InternalHarness } from '../internal/internal-harness.js';
import { describeEachBackend } from '../support/backends.js';
import { browser, consoleHarness, TEAM_A, TEAM_B } from './console-harness.js';

// The console's rules over injected requests (the browser test, console-browser.test.ts, clicks through
// the same pages in Chromium): sign-in into a session cookie, CSRF on every change, a reading token that
// cannot change anything, names from the CRM shown as text, and sessions every process shares.

const HOUR = 60 * 60 * 1000;
/** The text of element `id` in a page (tags dropped, entities left as the server wrote them). */
const textOf = (html: string, id: string) => new RegExp(`id="${id}"[^>]*>([^]*?)</`).exec(html)?.[1];
const main = (html: string) => html.slice(html.indexOf('<main>'), html.indexOf('</main>'));

describeEachBackend('console', (makeStore) => {
  const open: { h: InternalHarness; store: Store }[] = [];
  afterEach(async () => {
    for (const { h, store } of open.splice(0)) {
      await h.close();
      await store.close();
    }
  });
  const start = async (orgName?: string) => {
    const store = await makeStore();
    const h = await consoleHarness(store, orgName);
    open.push({ h, store });
    return h;
  };

  /** A signed-in browser with a new integration; returns its id and key. */
  const withIntegration = async (h: InternalHarness, scopes: ('read' | 'keys')[] = ['read', 'keys']) => {
    const b = browser(h);
    await b.signIn(await h.token('admin', ['read', 'keys']));
    await b.get('/console/integrations/new');
    const created = await b.post('/console/integrations', { name: 'Shop', teams: TEAM_A });
    const id = /integrations\/(prn_[0-9A-Za-z]+)/.exec(created.body)?.[1] as string;
    const key = textOf(created.body, 'new-key') as string;
    if (scopes.includes('keys')) return { b, id, key };
    const reader = browser(h);
    await reader.signIn(await h.token('reader', ['read']));
    return { b: reader, id, key };
  };

  it('sign-in with an operator token opens a session in an HttpOnly, SameSite=Strict cookie; the token never comes back', async () => {
    const h = await start();
    const token = await h.token('me', ['read', 'keys']);
    const b = browser(h);
    const page = await b.get('/console/integrations');
    expect([page.statusCode, page.headers.location]).toEqual([303, '/console/sign-in']);
    const signedIn = await b.signIn(token);
    expect([signedIn.statusCode, signedIn.headers.location]).toEqual([303, '/console/integrations']);
    const cookie = String(signedIn.headers['set-cookie']);
    expect(cookie).toMatch(
      new RegExp(`^${SESSION_COOKIE}=[A-Za-z0-9_-]{43}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=86400$`),
    );
    // Served over plain HTTP (loopback): no Secure attribute, which the browser would refuse to send back.
    expect(cookie).not.toContain('Secure');
    const list = await b.get('/console/integrations');
    expect(list.statusCode).toBe(200);
    expect(textOf(list.body, 'operator-name')).toBe('me');
    expect(list.body).not.toContain(token);
    expect(cookie).not.toContain(token);
    // Only the cookie's digest is stored.
    const rows = await h.store.findEntities<Record<string, unknown>>('console_session', {});
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(b.cookie);
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  it('a wrong token, an API key or a token without the read scope opens no session', async () => {
    const h = await start();
    const intake = await h.token('feeder', ['intake']);
    const b = browser(h);
    const wrong = await b.signIn(`cxo_${'A'.repeat(44)}`);
    expect(wrong.statusCode).toBe(401);
    expect(textOf(wrong.body, 'sign-in-error')).toBe('This token is not valid, or it was revoked.');
    const apiKey = await b.signIn(`crmx_live_${'a'.repeat(40)}`);
    expect(apiKey.statusCode).toBe(401);
    expect(textOf(apiKey.body, 'sign-in-error')).toContain('API key');
    const feeder = await b.signIn(intake);
    expect(feeder.statusCode).toBe(403);
    // The console reads before anything else, as the management API would: a token without `read` stays out.
    const keysOnly = await b.signIn(await h.token('keeper', ['keys', 'operate']));
    expect([keysOnly.statusCode, textOf(keysOnly.body, 'sign-in-error')]).toEqual([
      403,
      'The token keeper lacks the read scope the console needs.',
    ]);
    expect(b.cookie).toBeUndefined();
    expect(await h.store.findEntities('console_session', {})).toEqual([]);
  });

  it('the cookie is Secure when served over TLS, here behind a trusted proxy that says so', async () => {
    const store = await makeStore();
    const probe = await consoleHarness(store);
    open.push({ h: probe, store });
    const token = await probe.token('me', ['read']);
    const clock = probe.clock;
    const access = new StoreAccessControl({ store, clock, limits: DEFAULT_LIMITS });
    const tokens = new OperatorTokenAuth({
      store,
      clock,
      lockout: access.lockoutFor('opauth', DEFAULT_LIMITS),
      cacheMs: 1000,
    });
    const app = buildInternalApp({
      store,
      clock,
      limits: DEFAULT_LIMITS,
      tokens,
      surfaces: [consoleSurface],
      trustProxy: { hops: 1 },
    });
    try {
      const response = await app.inject({
        method: 'POST',
        url: '/console/sign-in',
        remoteAddress: '127.0.0.1',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-forwarded-proto': 'https',
          'x-forwarded-for': '203.0.113.9',
          host: 'console.example.test',
          origin: 'https://console.example.test',
        },
        payload: new URLSearchParams({ token }).toString(),
      });
      expect(response.statusCode).toBe(303);
      expect(String(response.headers['set-cookie'])).toMatch(/; HttpOnly; SameSite=Strict; Max-Age=86400; Secure$/);
    } finally {
      await app.close();
      await tokens.settle();
      access.close();
    }
  });

  it('every change needs the session CSRF token and a page of this origin', async () => {
    const h = await start();
    const { b, id } = await withIntegration(h);
    const noToken = await b.post(`/console/integrations/${id}/revoke`, { confirm: id, _csrf: '' });
    expect(noToken.statusCode).toBe(403);
    expect(textOf(noToken.body, 'error-code')).toBe('csrf_mismatch');
    const otherToken = await b.post(`/console/integrations/${id}/revoke`, { confirm: id, _csrf: 'x'.repeat(43) });
    expect(otherToken.statusCode).toBe(403);
    const crossSite = await b.post(
      `/console/integrations/${id}/revoke`,
      { confirm: id },
      {
        origin: 'https://evil.example',
        'sec-fetch-site': 'cross-site',
      },
    );
    expect([crossSite.statusCode, textOf(crossSite.body, 'error-code')]).toEqual([403, 'cross_origin']);
    // A sign-in posted from another site (login CSRF) is refused too.
    const crossSignIn = await browser(h).post(
      '/console/sign-in',
      { token: 'x' },
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    );
    expect(crossSignIn.statusCode).toBe(403);
    const unconfirmed = await b.post(`/console/integrations/${id}/revoke`, { confirm: 'no' });
    expect([unconfirmed.statusCode, textOf(unconfirmed.body, 'error-code')]).toEqual([400, 'confirmation_required']);
    expect(textOf((await b.get(`/console/integrations/${id}`)).body, 'integration-status')).toBe('active');
    const revoked = await b.post(`/console/integrations/${id}/revoke`, { confirm: id });
    expect(revoked.statusCode).toBe(303);
    expect(textOf((await b.get(`/console/integrations/${id}`)).body, 'integration-status')).toBe('revoked');
  });

  it('a reading token sees the pages but no change button, and the server refuses its changes', async () => {
    const h = await start();
    const { b: reader, id } = await withIntegration(h, ['read']);
    const page = await reader.get(`/console/integrations/${id}`);
    expect(page.statusCode).toBe(200);
    for (const control of ['roll-link', 'revoke-link', 'save-allowlist', 'end-old-key']) {
      expect(page.body).not.toContain(`id="${control}"`);
    }
    expect((await reader.get('/console/integrations')).body).not.toContain('id="create-link"');
    expect((await reader.get(`/console/integrations/${id}/revoke`)).statusCode).toBe(403);
    const revoke = await reader.post(`/console/integrations/${id}/revoke`, { confirm: id });
    expect([revoke.statusCode, textOf(revoke.body, 'error-code')]).toEqual([403, 'insufficient_scope']);
    const roll = await reader.post(`/console/integrations/${id}/roll`, { grace: '1h' });
    expect(roll.statusCode).toBe(403);
    const create = await reader.post('/console/integrations', { name: 'X', teams: TEAM_A });
    expect(create.statusCode).toBe(403);
    expect(textOf((await reader.get(`/console/integrations/${id}`)).body, 'integration-status')).toBe('active');
  });

  it('create shows the key once; no page shows it again; roll offers 1 h, 24 h, 7 d or compromised', async () => {
    const h = await start();
    const { b, id, key } = await withIntegration(h);
    expect(key).toMatch(/^crmx_live_[0-9A-Za-z]+$/);
    const created = await b.get(`/console/integrations/${id}`);
    expect(created.body).not.toContain(key);
    expect((await b.get('/console/integrations')).body).not.toContain(key);
    const form = await b.get(`/console/integrations/${id}/roll`);
    expect([...form.body.matchAll(/name="grace" value="([^"]+)"/g)].map((m) => m[1])).toEqual([
      '1h',
      '24h',
      '7d',
      'compromised',
    ]);
    const rolled = await b.post(`/console/integrations/${id}/roll`, { grace: '7d' });
    const second = textOf(rolled.body, 'new-key') as string;
    expect(second).toMatch(/^crmx_live_/);
    expect(second).not.toBe(key);
    expect(textOf(rolled.body, 'key-note')).toBe(
      `The old key works until ${new Date(h.clock.now() + 7 * 24 * HOUR).toISOString()}.`,
    );
    const detail = await b.get(`/console/integrations/${id}`);
    expect(detail.body).not.toContain(second);
    expect(detail.body).toContain('status-grace');
    const compromised = await b.post(`/console/integrations/${id}/roll`, { grace: 'compromised' });
    expect(textOf(compromised.body, 'key-note')).toBe('The old key is revoked: the API refuses it within 5 seconds.');
    expect((await b.post(`/console/integrations/${id}/roll`, { grace: '2h' })).statusCode).toBe(400);
  });

  it('the allowlist editor saves entries, names a malformed one, and says whether an address would pass', async () => {
    const h = await start();
    const { b, id } = await withIntegration(h);
    const saved = await b.post(`/console/integrations/${id}/allowlist`, { entries: '203.0.113.0/24\n198.51.100.7' });
    expect(saved.statusCode).toBe(303);
    const inRange = await b.get(`/console/integrations/${id}?check=203.0.113.50`);
    expect(textOf(inRange.body, 'check-result')).toBe('203.0.113.50 passes (entry 203.0.113.0/24).');
    const outside = await b.get(`/console/integrations/${id}?check=192.0.2.1`);
    expect(textOf(outside.body, 'check-result')).toBe('192.0.2.1 is refused (<code>ip_not_allowed');
    const notAnAddress = await b.get(`/console/integrations/${id}?check=nope`);
    expect(textOf(notAnAddress.body, 'check-result')).toBe('not an IP address: nope');
    const bad = await b.post(`/console/integrations/${id}/allowlist`, { entries: '10.0.0.1\n10.0.0.0/33' });
    expect(bad.statusCode).toBe(400);
    expect(textOf(bad.body, 'error-message')).toContain('10.0.0.0/33');
  });

  it('names from the CRM holding markup and terminal escapes render as text', async () => {
    const name = '<img src=x onerror=alert(1)><b>Acme</b>\u001b[31m\u202e';
    const h = await start(name);
    const { b, id } = await withIntegration(h);
    const page = await b.get(`/console/integrations/${id}`);
    expect(textOf(page.body, 'organization-name')).toBe(
      '&lt;img src=x onerror=alert(1)&gt;&lt;b&gt;Acme&lt;/b&gt;\\x1b[31m\\u202e',
    );
    expect(main(page.body)).not.toContain('<img');
    expect(main(page.body)).not.toContain('\u001b');
    const list = await b.get('/console/integrations');
    expect(main(list.body)).toContain('&lt;b&gt;Acme&lt;/b&gt;\\x1b[31m');
  });

  it('pages carry a strict content security policy and no inline script; scripts and styles come from the package', async () => {
    const h = await start();
    const { b, id } = await withIntegration(h);
    for (const url of [
      '/console/integrations',
      `/console/integrations/${id}`,
      `/console/integrations/${id}/audit`,
      '/console/sign-in',
    ]) {
      const page = await b.get(url);
      const csp = String(page.headers['content-security-policy']);
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(page.headers['cache-control']).toBe('no-store');
      expect(page.headers['x-frame-options']).toBe('SAMEORIGIN');
      // Every script has a source, or is data that never runs.
      const scripts = [...page.body.matchAll(/<script([^>]*)>/g)].map((m) => m[1]);
      for (const attributes of scripts)
        expect(attributes).toMatch(/ src="\/console\/assets\/|type="application\/json"/);
      expect(page.body).not.toMatch(/ on[a-z]+=| style=/);
    }
    for (const asset of ['console.js', 'console.css', 'uplot.js', 'uplot.css', 'usage-chart.js']) {
      const response = await b.get(`/console/assets/${asset}`);
      expect(response.statusCode, asset).toBe(200);
      expect(response.body.length, asset).toBeGreaterThan(100);
    }
    expect((await b.get('/console/assets/../../package.json')).statusCode).toBe(404);
  });

  it('sign out, a revoked token, 8 hours unused or 24 hours after sign-in end the session', async () => {
    const h = await start();
    const token = await h.token('me', ['read']);
    const b = browser(h);
    await b.signIn(token);
    expect((await b.get('/console/integrations')).statusCode).toBe(200);
    const stale = b.cookie;
    await b.post('/console/sign-out', {});
    expect(b.cookie).toBeUndefined();
    b.cookie = stale;
    expect((await b.get('/console/integrations')).statusCode).toBe(303);

    await b.signIn(token);
    h.clock.advance(8 * HOUR - 60_000);
    expect((await b.get('/console/integrations')).statusCode).toBe(200);
    h.clock.advance(8 * HOUR - 60_000);
    expect((await b.get('/console/integrations')).statusCode).toBe(200);
    h.clock.advance(8 * HOUR + 1000);
    expect((await b.get('/console/integrations')).statusCode).toBe(303);

    await b.signIn(token);
    for (let i = 0; i < 4; i++) {
      h.clock.advance(6 * HOUR);
      expect((await b.get('/console/integrations')).statusCode).toBe(i < 3 ? 200 : 303);
    }

    const other = await h.token('other', ['read']);
    await b.signIn(other);
    expect((await b.get('/console/integrations')).statusCode).toBe(200);
    const { revokeOperatorToken } = await import('../../src/access/operator-tokens.js');
    await revokeOperatorToken(h.store, h.clock, 'other');
    expect((await b.get('/console/integrations')).statusCode).toBe(303);
    // Expired and ended sessions leave no row behind.
    await b.signIn(token);
    expect(await h.store.findEntities('console_session', {})).toHaveLength(1);
  });

  it('a session opened through one process works through another sharing the database', async () => {
    const h = await start();
    const store = h.store;
    const { internalHarness } = await import('../internal/internal-harness.js');
    const second = await internalHarness(store, [consoleSurface]);
    try {
      const b = browser(h);
      await b.signIn(await h.token('me', ['read', 'keys']));
      const elsewhere = browser(second);
      elsewhere.cookie = b.cookie;
      const page = await elsewhere.get('/console/integrations');
      expect([page.statusCode, textOf(page.body, 'operator-name')]).toEqual([200, 'me']);
      await elsewhere.get('/console/integrations/new');
      const created = await elsewhere.post('/console/integrations', {
        name: 'Elsewhere',
        teams: `${TEAM_A}, ${TEAM_B}`,
      });
      expect(created.statusCode).toBe(201);
      await elsewhere.post('/console/sign-out', {});
      expect((await b.get('/console/integrations')).statusCode).toBe(303);
    } finally {
      await second.close();
    }
  });

  it('the usage panel charts items per hour over the last day and lists refusals by reason; the request log filters', async () => {
    const h = await start();
    const { b, id, key } = await withIntegration(h);
    const now = h.clock.now();
    const hour = now - (now % HOUR);
    const entry = (ago: number, status: number, code: string | null, route: string, items: number) => ({
      at: now - ago,
      integration: id,
      requestId: `req_${ago}`,
      method: 'GET',
      route,
      status,
      code,
      items,
      address: '203.0.113.9',
    });
    const count = (hoursAgo: number, reason: string, requests: number, items: number) => ({
      integration: id,
      hour: hour - hoursAgo * HOUR,
      route: '/v1/leads',
      reason,
      requests,
      items,
      lastAt: hour - hoursAgo * HOUR,
    });
    await runCommand(h.store, 'usage.append', {
      log: [
        entry(3000, 200, null, '/v1/leads', 100),
        entry(2000, 403, 'ip_not_allowed', '/v1/leads', 0),
        entry(1000, 401, 'invalid_credentials', '/v1/me', 0),
      ],
      counts: [count(0, '', 3, 250), count(5, '', 1, 40), count(2, 'ip_not_allowed', 2, 0), count(30, '', 9, 999)],
      lastUses: [],
    });
    const page = await b.get(`/console/integrations/${id}`);
    const hours = JSON.parse(textOf(page.body, 'usage-data') as string) as { hour: string; items: number }[];
    expect(hours).toHaveLength(24);
    expect(hours.at(-1)).toEqual({ hour: new Date(hour).toISOString(), items: 250 });
    expect(hours.at(-6)).toEqual({ hour: new Date(hour - 5 * HOUR).toISOString(), items: 40 });
    expect(hours.reduce((n, h) => n + h.items, 0)).toBe(290);
    expect(page.body).toContain('<tr><td><code>ip_not_allowed</code></td><td>2</td></tr>');
    expect(page.body).not.toContain(key);

    const codes = async (query: string) => {
      const log = await b.get(`/console/integrations/${id}/requests${query}`);
      return [...log.body.matchAll(/class="col-status">(\d+)</g)].map((m) => Number(m[1]));
    };
    expect(await codes('')).toEqual([401, 403, 200]);
    expect(await codes('?outcome=failed')).toEqual([401, 403]);
    expect(await codes('?outcome=succeeded')).toEqual([200]);
    expect(await codes('?code=ip_not_allowed')).toEqual([403]);
    expect(await codes('?endpoint=%2Fv1%2Fme&status=401')).toEqual([401]);
    const bad = await b.get(`/console/integrations/${id}/requests?status=abc`);
    expect(bad.body).toContain('Status abc is not an HTTP status.');
  });

  it('the audit trail shows each change with the token name as actor', async () => {
    const h = await start();
    const { b, id } = await withIntegration(h);
    await b.get(`/console/integrations/${id}/revoke`);
    await b.post(`/console/integrations/${id}/revoke`, { confirm: id });
    const trail = await b.get(`/console/integrations/${id}/audit`);
    const rows = [
      ...trail.body.matchAll(
        /<tr><td>[^<]*<\/td><td>([^<]*)<\/td><td class="col-action">([^<]*)<\/td><td>[^<]*<\/td><td class="col-outcome">([^<]*)</g,
      ),
    ].map((m) => [m[1], m[2], m[3]]);
    expect(rows).toEqual([
      ['admin', 'integration.revoke', 'ok'],
      ['admin', 'integration.create', 'ok'],
    ]);
    const filtered = await b.get('/console/audit?action=integration.revoke');
    expect(filtered.body.match(/class="col-action"/g)).toHaveLength(1);
  });
});
