import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { changeAllowlist } from '../../src/access/integrations.js';
import { resolveTrustProxy, serverSettings } from '../../src/cli/options.js';
import { parseTrustProxy, type TrustProxy } from '../../src/http/trust-proxy.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import { startServer } from '../../src/server.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { runCli } from '../cli/cli.js';
import { type AccessHarness, accessHarness } from './http-harness.js';

// The client address behind a load balancer: a real listening server, so the peer address Fastify sees
// is the TCP connection's (127.0.0.1, or ::ffff:127.0.0.1 on a dual-stack socket), and X-Forwarded-For is
// sent as a proxy would send it.

const UNKNOWN_KEY = 'Bearer crmx_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const LIMITS: Partial<Limits> = { keyCacheMs: 0, authFailuresPerIp: 3, firewallRequestsPerMinute: 3 };

interface Served {
  h: AccessHarness;
  /** `status code` (or just the status for the firewall's bare answers). */
  get(options: { key?: string | undefined; forwardedFor?: string }): Promise<string>;
}

describe('trusted proxy: which address lockouts, the firewall budget and allowlists see', () => {
  const open: Array<{ h: AccessHarness; store: SqliteStore }> = [];
  afterEach(async () => {
    for (const { h, store } of open.splice(0)) {
      await h.app.close();
      await store.close();
    }
  });

  async function serve(trustProxy?: TrustProxy, host = '127.0.0.1'): Promise<Served> {
    const store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    const h = await accessHarness(store, LIMITS, trustProxy ? { trustProxy } : {});
    open.push({ h, store });
    const origin = await h.app.listen({ host, port: 0 });
    const base = origin.replace('[::]', '127.0.0.1');
    return {
      h,
      async get(options) {
        const headers: Record<string, string> = {};
        const key = 'key' in options ? options.key : h.key;
        if (key !== undefined) headers.authorization = key;
        if (options.forwardedFor !== undefined) headers['x-forwarded-for'] = options.forwardedFor;
        const res = await fetch(`${base}/v1/me`, { headers });
        const text = await res.text();
        return text === '' ? String(res.status) : `${res.status} ${(JSON.parse(text) as { code?: string }).code}`;
      },
    };
  }

  it('with the setting off, X-Forwarded-For is ignored: lockout and allowlist use the socket address', async () => {
    const s = await serve();
    for (let i = 0; i < 3; i++) {
      expect(await s.get({ key: UNKNOWN_KEY, forwardedFor: `203.0.113.${i + 1}` })).toBe('401 invalid_credentials');
    }
    // Every "forwarded" address was the one socket address, which is now locked.
    expect(await s.get({ forwardedFor: '198.51.100.99' })).toBe('429 rate_limited');

    const t = await serve();
    await changeAllowlist(t.h.store, t.h.integrationId, 'set', ['198.51.100.0/24']);
    expect(await t.get({ forwardedFor: '198.51.100.7' })).toBe('403 ip_not_allowed');
    await changeAllowlist(t.h.store, t.h.integrationId, 'set', ['127.0.0.1']);
    expect(await t.get({ forwardedFor: '203.0.113.1' })).toBe('200 undefined');
  });

  it('trusting 127.0.0.1, lockouts of one forwarded address do not lock another forwarded address', async () => {
    const s = await serve(parseTrustProxy('127.0.0.1', 'test'));
    for (let i = 0; i < 3; i++) {
      expect(await s.get({ key: UNKNOWN_KEY, forwardedFor: '203.0.113.1' })).toBe('401 invalid_credentials');
    }
    expect(await s.get({ forwardedFor: '203.0.113.1' })).toBe('429 rate_limited');
    expect(await s.get({ forwardedFor: '203.0.113.2' })).toBe('200 undefined');
    // A request the proxy forwarded without the header is the proxy's own, not the locked client's.
    expect(await s.get({})).toBe('200 undefined');
  });

  it('trusting 127.0.0.1, the firewall budget counts per forwarded address', async () => {
    const s = await serve(parseTrustProxy('127.0.0.1', 'test'));
    for (let i = 0; i < 3; i++) {
      expect(await s.get({ key: undefined, forwardedFor: '203.0.113.1' })).toBe('401 invalid_credentials');
    }
    expect(await s.get({ key: undefined, forwardedFor: '203.0.113.1' })).toBe('429');
    expect(await s.get({ key: undefined, forwardedFor: '203.0.113.2' })).toBe('401 invalid_credentials');
  });

  it('trusting 127.0.0.1, the allowlist admits and refuses by forwarded address, never by a spoofed leftmost entry', async () => {
    const s = await serve(parseTrustProxy('127.0.0.1', 'test'));
    await changeAllowlist(s.h.store, s.h.integrationId, 'set', ['198.51.100.0/24']);
    expect(await s.get({ forwardedFor: '198.51.100.7' })).toBe('200 undefined');
    expect(await s.get({ forwardedFor: '203.0.113.1' })).toBe('403 ip_not_allowed');
    // The client at 203.0.113.1 sent "X-Forwarded-For: 198.51.100.7"; the proxy appended the real peer.
    expect(await s.get({ forwardedFor: '198.51.100.7, 203.0.113.1' })).toBe('403 ip_not_allowed');
    expect(await s.get({ forwardedFor: '203.0.113.1, 198.51.100.7' })).toBe('200 undefined');
    // No header: the peer (the proxy itself) is the client.
    expect(await s.get({})).toBe('403 ip_not_allowed');
  });

  it('with two trusted tiers (127.0.0.1 and 10.0.0.0/8), only the hops the setting trusts are skipped', async () => {
    const s = await serve(parseTrustProxy('127.0.0.1, 10.0.0.0/8', 'test'));
    await changeAllowlist(s.h.store, s.h.integrationId, 'set', ['198.51.100.0/24']);
    expect(await s.get({ forwardedFor: '203.0.113.1, 198.51.100.7, 10.1.2.3' })).toBe('200 undefined');
    expect(await s.get({ forwardedFor: '198.51.100.7, 203.0.113.1, 10.1.2.3' })).toBe('403 ip_not_allowed');
  });

  it('a request from an untrusted peer with X-Forwarded-For is judged by its socket address', async () => {
    const s = await serve(parseTrustProxy('10.0.0.0/8', 'test'));
    await changeAllowlist(s.h.store, s.h.integrationId, 'set', ['198.51.100.0/24']);
    expect(await s.get({ forwardedFor: '198.51.100.7' })).toBe('403 ip_not_allowed');
    await changeAllowlist(s.h.store, s.h.integrationId, 'set', []);
    for (let i = 0; i < 3; i++) {
      expect(await s.get({ key: UNKNOWN_KEY, forwardedFor: `203.0.113.${i + 1}` })).toBe('401 invalid_credentials');
    }
    expect(await s.get({ forwardedFor: '198.51.100.7' })).toBe('429 rate_limited');
  });

  it('the hop-count form trusts exactly that many hops nearest the API', async () => {
    const one = await serve(parseTrustProxy('1', 'test'));
    await changeAllowlist(one.h.store, one.h.integrationId, 'set', ['198.51.100.0/24']);
    expect(await one.get({ forwardedFor: '198.51.100.7, 203.0.113.1' })).toBe('403 ip_not_allowed');
    expect(await one.get({ forwardedFor: '203.0.113.1, 198.51.100.7' })).toBe('200 undefined');

    const two = await serve(parseTrustProxy('2', 'test'));
    await changeAllowlist(two.h.store, two.h.integrationId, 'set', ['198.51.100.0/24']);
    expect(await two.get({ forwardedFor: '203.0.113.9, 198.51.100.7, 203.0.113.1' })).toBe('200 undefined');
    expect(await two.get({ forwardedFor: '198.51.100.7, 203.0.113.9, 203.0.113.1' })).toBe('403 ip_not_allowed');
  });

  it('IPv4-mapped IPv6 (::ffff:a.b.c.d) compares as IPv4, for the trusted proxy and in the allowlist', async () => {
    // Listening on :: makes Node report a connection to 127.0.0.1 as ::ffff:127.0.0.1.
    const plain = await serve(undefined, '::');
    await changeAllowlist(plain.h.store, plain.h.integrationId, 'set', ['127.0.0.1']);
    expect(await plain.get({})).toBe('200 undefined');

    const s = await serve(parseTrustProxy('127.0.0.1', 'test'), '::');
    await changeAllowlist(s.h.store, s.h.integrationId, 'set', ['198.51.100.0/24']);
    expect(await s.get({ forwardedFor: '::ffff:198.51.100.7' })).toBe('200 undefined');
    expect(await s.get({ forwardedFor: '198.51.100.7' })).toBe('200 undefined');
    expect(await s.get({ forwardedFor: '::ffff:203.0.113.1' })).toBe('403 ip_not_allowed');
  });
});

describe('trusted proxy setting: strict at start', () => {
  it('startServer (what serve and start run) hands the setting to the API', async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    const server = await startServer({
      store,
      ...serverSettings({ port: 0, trustProxy: '127.0.0.1' }, {}),
      limits: { ...DEFAULT_LIMITS, authFailuresPerIp: 2 },
      logger: pino({ level: 'silent' }),
      handleSignals: false,
      feedJobs: false,
    });
    try {
      const me = (forwardedFor: string) =>
        fetch(`${server.origin}/v1/me`, {
          headers: { authorization: UNKNOWN_KEY, 'x-forwarded-for': forwardedFor },
        }).then((res) => res.status);
      expect([await me('203.0.113.1'), await me('203.0.113.1'), await me('203.0.113.1')]).toEqual([401, 401, 429]);
      expect(await me('203.0.113.2')).toBe(401);
    } finally {
      await server.close();
    }
  });

  it('accepts addresses, CIDR ranges and a hop count; unset means none', () => {
    expect(resolveTrustProxy(undefined, {})).toBeUndefined();
    expect(resolveTrustProxy(undefined, { CRM_EXPORT_TRUST_PROXY: ' 10.0.0.0/8, 127.0.0.1,::1 ' })).toEqual({
      addresses: ['10.0.0.0/8', '127.0.0.1', '::1'],
    });
    expect(resolveTrustProxy('2', { CRM_EXPORT_TRUST_PROXY: '10.0.0.1' })).toEqual({ hops: 2 });
    expect(serverSettings({}, {})).not.toHaveProperty('trustProxy');
  });

  it('a malformed setting or one trusting everyone is refused with an error naming the setting', () => {
    const bad = [
      'true',
      '*',
      'loopback',
      '10.0.0',
      '10.0.0.0/33',
      '10.0.0.1/8',
      '0.0.0.0/0',
      '::/0',
      '10.0.0.1,',
      '0',
      '11',
    ];
    for (const value of bad) {
      expect(() => resolveTrustProxy(undefined, { CRM_EXPORT_TRUST_PROXY: value }), value).toThrow(
        /^CRM_EXPORT_TRUST_PROXY: /,
      );
      expect(() => resolveTrustProxy(value, {}), value).toThrow(/^--trust-proxy: /);
    }
  });

  it('serve with a malformed CRM_EXPORT_TRUST_PROXY exits 1 naming it, before opening anything', async () => {
    const result = await runCli(['serve', '--db', 'sqlite::memory:', '--port', '0'], {
      env: { CRM_EXPORT_TRUST_PROXY: 'true' },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('CRM_EXPORT_TRUST_PROXY: not an IP address, CIDR range or hop count: true');
  }, 60_000);
});
