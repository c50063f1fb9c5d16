import { afterEach, beforeEach, expect, it } from 'vitest';
import type { AccessControl, AccessRequest, Principal } from '../../src/access/access-control.js';
import { createIntegration, revokeIntegration } from '../../src/access/integrations.js';
import { utcDay } from '../../src/access/limits/rate-limits.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { ManualClock } from '../../src/clock.js';
import { ApiError } from '../../src/errors/catalogue.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { seedTeam } from './fixtures.js';

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error.retryAfter === undefined ? error.code : `${error.code} ${error.retryAfter}`;
  }
}

describeEachBackend('access control: lockouts, rate limit and quota (memory)', (makeStore) => {
  let store: Store;
  let clock: ManualClock;
  let key: string;
  let integrationId: string;
  const limits: Limits = { ...DEFAULT_LIMITS };
  const make = (over: Partial<Limits> = {}) => new StoreAccessControl({ store, clock, limits: { ...limits, ...over } });
  const req = (authorization: string | undefined, ip = '192.0.2.10'): AccessRequest => ({
    authorization,
    origin: undefined,
    ip,
  });
  const wrong = () => `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;

  beforeEach(async () => {
    store = await makeStore();
    clock = new ManualClock(Date.parse('2026-01-15T12:00:00.000Z'));
    await seedTeam(store, 'team_solo');
    const created = await createIntegration(store, clock, { teams: ['team_solo'], name: 'L' });
    key = `Bearer ${created.key}`;
    integrationId = created.integration.id;
  });
  afterEach(() => store.close());

  it('60 failures from one address lock it at the 60th: then every request, even a valid key, gets 429 rate_limited with Retry-After 600', async () => {
    const access = make();
    for (let i = 1; i <= 60; i++) {
      const attempt = i % 3 === 0 ? undefined : i % 3 === 1 ? 'Bearer nonsense' : `Bearer crmx_live_${'x'.repeat(44)}`;
      expect(await outcome(access.authenticate(req(attempt, '203.0.113.1')))).toBe('invalid_credentials');
    }
    expect(await outcome(access.authenticate(req(key, '203.0.113.1')))).toBe('rate_limited 600');
    expect(await outcome(access.authenticate(req(key, '203.0.113.2')))).toBe('ok');
    clock.advance(600_000 - 1);
    expect(await outcome(access.authenticate(req(key, '203.0.113.1')))).toBe('rate_limited 600');
    clock.advance(1);
    expect(await outcome(access.authenticate(req(key, '203.0.113.1')))).toBe('ok');
  });

  it('59 failures do not lock an address', async () => {
    const access = make();
    for (let i = 0; i < 59; i++) await outcome(access.authenticate(req(undefined, '203.0.113.3')));
    expect(await outcome(access.authenticate(req(key, '203.0.113.3')))).toBe('ok');
  });

  it('20 wrong secrets with one key lock the key at the 20th; its real secret still works; other addresses get 429 with a wrong secret', async () => {
    const access = make();
    for (let i = 1; i <= 20; i++) {
      expect(await outcome(access.authenticate(req(wrong(), `198.51.100.${i}`)))).toBe('invalid_credentials');
    }
    expect(await outcome(access.authenticate(req(wrong(), '198.51.100.99')))).toBe('rate_limited 600');
    expect(await outcome(access.authenticate(req(key, '198.51.100.99')))).toBe('ok');
    clock.advance(600_000);
    expect(await outcome(access.authenticate(req(wrong(), '198.51.100.99')))).toBe('invalid_credentials');
  });

  it('revoked or expired keys, inactive integrations and allowlist refusals are not counted', async () => {
    const access = make({ keyCacheMs: 0, authFailuresPerIp: 3, authFailuresPerKey: 3 });
    await store.write(async (tx) => {
      const integration = await tx.getEntity<{ allowlist: string[] }>('integration', integrationId);
      await tx.putEntity({ ...integration!, state: { ...integration!.state, allowlist: ['10.0.0.0/8'] } });
    });
    for (let i = 0; i < 5; i++)
      expect(await outcome(access.authenticate(req(key, '203.0.113.7')))).toBe('ip_not_allowed');
    await revokeIntegration(store, clock, integrationId);
    for (let i = 0; i < 5; i++) {
      expect(await outcome(access.authenticate(req(key, '203.0.113.7')))).toBe('invalid_credentials');
    }
    // Five refusals above and none counted: the address is not locked, so one more failure still gets 401.
    expect(await outcome(access.authenticate(req(undefined, '203.0.113.7')))).toBe('invalid_credentials');
  });

  it('firewall: more than firewallRequestsPerMinute requests without a well-formed key block the address for firewallLockSeconds', async () => {
    const access = make({ firewallRequestsPerMinute: 5, firewallLockSeconds: 600 });
    for (let i = 0; i < 5; i++) expect(await access.firewallBlocked('203.0.113.9', false)).toBe(false);
    expect(await access.firewallBlocked('203.0.113.9', false)).toBe(true);
    expect(await access.firewallBlocked('203.0.113.9', true)).toBe(true);
    expect(await access.firewallBlocked('203.0.113.10', true)).toBe(false);
    clock.advance(600_000);
    expect(await access.firewallBlocked('203.0.113.9', true)).toBe(false);
    for (let i = 0; i < 50; i++) expect(await access.firewallBlocked('203.0.113.11', true)).toBe(false);
  });

  it('reserve sets aside the full limit up front and settle gives back the rest: no drift over many requests', async () => {
    const access = make({ itemsPerMinute: 1000 }) as AccessControl & {
      usage(id: string, keys: string[]): Promise<{ itemsThisMinute: number; quotaUsedToday: number }>;
    };
    const principal = await access.authenticate(req(key));
    let used = 0;
    for (let i = 0; i < 50; i++) {
      const reservation = await access.reserve(principal, 'sync', 100, true);
      expect((await access.usage(integrationId, [])).itemsThisMinute).toBe(used + 100);
      const n = i % 7;
      await reservation.settle(n);
      await reservation.settle(n);
      used += n;
      expect((await access.usage(integrationId, [])).itemsThisMinute).toBe(used);
    }
    expect((await access.usage(integrationId, [])).quotaUsedToday).toBe(used);
  });

  it('a nearly spent allowance: a large limit gets 429 rate_limited with whole-second Retry-After, a smaller limit keeps moving', async () => {
    const access = make({ itemsPerMinute: 250 });
    const principal = await access.authenticate(req(key));
    await (await access.reserve(principal, 'sync', 100, true)).settle(100);
    await (await access.reserve(principal, 'sync', 100, true)).settle(100);
    const refused = await access.reserve(principal, 'sync', 100, true).catch((e: ApiError) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).code).toBe('rate_limited');
    expect(Number.isInteger((refused as ApiError).retryAfter)).toBe(true);
    expect((refused as ApiError).retryAfter).toBeGreaterThanOrEqual(1);
    expect((refused as ApiError).retryAfter).toBeLessThanOrEqual(60);
    // the refused request kept nothing: 50 items are still there
    await (await access.reserve(principal, 'sync', 50, true)).settle(50);
    expect(await outcome(access.reserve(principal, 'sync', 1, true))).toMatch(/^rate_limited \d+$/);
  });

  it('the rate limit is shared by every team and key of the integration; read class has its own limit', async () => {
    const access = make({ itemsPerMinute: 10, readRequestsPerMinute: 3 });
    const principal = await access.authenticate(req(key));
    const other: Principal = { ...principal, keyId: 'AnotherKeyId' };
    await (await access.reserve(principal, 'sync', 10, true)).settle(10);
    expect(await outcome(access.reserve(other, 'sync', 1, true))).toMatch(/^rate_limited/);
    for (let i = 0; i < 3; i++) await (await access.reserve(principal, 'read', 1, false)).settle(1);
    expect(await outcome(access.reserve(other, 'read', 1, false))).toMatch(/^rate_limited/);
  });

  it('daily quota: 429 quota_exceeded with Retry-After until 00:00 UTC, reset at midnight; single records, search and /me do not count', async () => {
    const access = make({ dailyItemQuota: 30 }) as AccessControl & {
      usage(id: string, keys: string[]): Promise<{ quotaUsedToday: number }>;
    };
    const principal = await access.authenticate(req(key));
    clock.set('2026-01-15T23:58:59.500Z');
    await (await access.reserve(principal, 'read', 1, false)).settle(1);
    await (await access.reserve(principal, 'sync', 25, false)).settle(25);
    expect((await access.usage(integrationId, [])).quotaUsedToday).toBe(0);
    await (await access.reserve(principal, 'sync', 25, true)).settle(20);
    await (await access.reserve(principal, 'sync', 25, true)).settle(10);
    expect((await access.usage(integrationId, [])).quotaUsedToday).toBe(30);
    // 60.5 s to midnight: Retry-After rounds up to 61
    expect(await outcome(access.reserve(principal, 'sync', 1, true))).toBe('quota_exceeded 61');
    expect(await outcome(access.reserve(principal, 'read', 1, false))).toBe('ok');
    clock.set('2026-01-15T23:59:59.999Z');
    expect(await outcome(access.reserve(principal, 'sync', 1, true))).toBe('quota_exceeded 1');
    clock.set('2026-01-16T00:00:00.000Z');
    expect(await outcome(access.reserve(principal, 'sync', 1, true))).toBe('ok');
  });

  it('the daily quota is one atomic operation: two requests racing at the edge of the quota never both pass', async () => {
    const access = make({ dailyItemQuota: 30 }) as AccessControl & {
      usage(id: string, keys: string[]): Promise<{ quotaUsedToday: number }>;
    };
    const principal = await access.authenticate(req(key));
    await (await access.reserve(principal, 'sync', 29, true)).settle(29);
    for (let round = 0; round < 20; round++) {
      const raced = await Promise.allSettled([
        access.reserve(principal, 'sync', 25, true),
        access.reserve(principal, 'sync', 25, true),
      ]);
      const passed = raced.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      expect(passed).toHaveLength(1);
      expect(raced.some((r) => r.status === 'rejected' && (r.reason as ApiError).code === 'quota_exceeded')).toBe(true);
      await passed[0]?.settle(0);
    }
    // The page that crosses the quota passes while the count is under it, and may cross it by its limit.
    await (await access.reserve(principal, 'sync', 25, true)).settle(25);
    expect((await access.usage(integrationId, [])).quotaUsedToday).toBe(54);
    expect(await outcome(access.reserve(principal, 'sync', 1, true))).toMatch(/^quota_exceeded \d+$/);
  });

  it('utcDay keys the quota by UTC date and counts the ms to the next midnight', () => {
    expect(utcDay(Date.parse('2026-03-01T00:00:00.000Z'))).toEqual({ day: '2026-03-01', msToMidnight: 86_400_000 });
    expect(utcDay(Date.parse('2026-02-28T23:59:59.001Z'))).toEqual({ day: '2026-02-28', msToMidnight: 999 });
  });
});
