import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { changeAllowlist, revokeIntegration } from '../../src/access/integrations.js';
import { rollKey } from '../../src/access/keys.js';
import { changeTeam, setOrganizationPlan } from '../../src/access/organizations.js';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { putMeta } from '../support/meta.js';
import { type AccessHarness, accessHarness, putPlainRecords } from './http-harness.js';

const wrongSecret = (key: string) => `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
const ORIGIN = { origin: 'https://app.example' };
const TEAM = { 'service-team': 'team_a1' };

describeEachBackend('check order, lockouts, rate limit and quota through HTTP', (makeStore) => {
  let store: Store;
  let h: AccessHarness;
  beforeEach(async () => {
    store = await makeStore();
    h = await accessHarness(store, { keyCacheMs: 0 });
  });
  afterEach(async () => {
    await h.app.close();
    await store.close();
  });

  const answer = async (url: string, options?: Parameters<AccessHarness['inject']>[1]) => {
    const res = await h.inject(url, options);
    if (res.statusCode === 200) return '200';
    const retry = res.headers['retry-after'];
    return `${res.statusCode} ${res.json().code}${retry === undefined ? '' : ` retry=${retry}`}`;
  };

  it('the order of docs/auth.md: switches, address lock, Origin, key, expiry, revocation, allowlist, quota, team', async () => {
    // 2 and 3 before 6: a switched-off endpoint answers before any key check
    await putMeta(h.store, 'capability_disabled', 'me');
    expect(await answer('/v1/me', { key: undefined })).toBe('403 capability_disabled');
    await putMeta(h.store, 'api_disabled', 'yes');
    expect(await answer('/v1/me', { key: undefined })).toBe('503 api_disabled');
    await putMeta(h.store, 'api_disabled', 'no');
    await putMeta(h.store, 'capability_disabled', '');
    // 5 before 6/9: Origin with a wrong key
    expect(await answer('/v1/me', { key: wrongSecret(h.key), headers: ORIGIN })).toBe('400 secret_key_in_browser');
    // 10 before 12: an expired key from outside the allowlist
    await changeAllowlist(h.store, h.integrationId, 'set', ['198.51.100.0/24']);
    const old = h.key;
    h.key = `Bearer ${(await rollKey(h.store, h.clock, h.integrationId, { grace: '1h' })).key}`;
    h.clock.advance(3_600_000);
    expect(await answer('/v1/me', { key: old, ip: '203.0.113.1' })).toBe('401 key_expired');
    // 9 before 12: a wrong key from outside the allowlist
    expect(await answer('/v1/me', { key: wrongSecret(h.key), ip: '203.0.113.1' })).toBe('401 invalid_credentials');
    // 12 before 15: a restricted team from outside the allowlist
    await changeTeam(h.store, 'team_a1', { field: 'sensitiveSector', value: true });
    await setOrganizationPlan(h.store, 'org_a', { plan: 'no_api' });
    expect(await answer('/v1/members', { ip: '203.0.113.1', headers: TEAM })).toBe('403 ip_not_allowed');
    // 15: plan before sector
    expect(await answer('/v1/members', { ip: '198.51.100.1', headers: TEAM })).toBe('403 plan_not_entitled');
    // the charge (14, 15) before the team (16, 17): every request is paid for before any team lookup
    await h.rebuild({ keyCacheMs: 0, dailyItemQuota: 1 });
    await setOrganizationPlan(h.store, 'org_a', { plan: 'api_included' });
    await changeTeam(h.store, 'team_a1', { field: 'sensitiveSector', value: false });
    await changeTeam(h.store, 'team_a1', { field: 'state', value: 'disabled' });
    expect(await answer('/v1/members', { ip: '198.51.100.1', headers: TEAM })).toBe('403 team_state_restricted');
    expect(await answer('/v1/teams', { ip: '198.51.100.1' })).toBe('200');
    expect(await answer('/v1/members', { ip: '198.51.100.1', headers: TEAM })).toMatch(/^429 quota_exceeded/);
    // 11 before 12: a revoked integration from outside the allowlist
    await revokeIntegration(h.store, h.clock, h.integrationId);
    expect(await answer('/v1/me', { ip: '203.0.113.1' })).toBe('401 invalid_credentials');
  });

  it('an address is locked at its 60th failure: the 61st request, even with a valid key and an Origin, gets 429 rate_limited, Retry-After 600', async () => {
    const ip = '203.0.113.60';
    for (let i = 1; i <= 60; i++) {
      const key = [undefined, 'Bearer nope', `Bearer crmx_live_${'Z'.repeat(44)}`, wrongSecret(h.key)][i % 4];
      expect(await answer('/v1/me', { key, ip })).toBe('401 invalid_credentials');
    }
    expect(await answer('/v1/me', { ip })).toBe('429 rate_limited retry=600');
    expect(await answer('/v1/me', { ip, headers: ORIGIN })).toBe('429 rate_limited retry=600');
    expect(await answer('/v1/me', { ip: '203.0.113.61' })).toBe('200');
    h.clock.advance(600_000);
    expect(await answer('/v1/me', { ip })).toBe('200');
  });

  it('a key is locked at its 20th wrong secret: wrong secrets get 429 Retry-After 600, the real secret still works', async () => {
    for (let i = 1; i <= 20; i++) {
      expect(await answer('/v1/me', { key: wrongSecret(h.key), ip: `198.51.100.${i}` })).toBe(
        '401 invalid_credentials',
      );
    }
    expect(await answer('/v1/me', { key: wrongSecret(h.key), ip: '198.51.100.200' })).toBe(
      '429 rate_limited retry=600',
    );
    expect(await answer('/v1/me', { ip: '198.51.100.200' })).toBe('200');
  });

  it('a list sets aside its full reservation: with 100 items a minute the second /teams is refused, with whole-second Retry-After', async () => {
    await h.rebuild({ keyCacheMs: 0, itemsPerMinute: 100 });
    expect(await answer('/v1/teams')).toBe('200');
    const refused = await h.inject('/v1/teams');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().code).toBe('rate_limited');
    expect(refused.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    // single-record endpoints are in the read class, limited separately
    expect(await answer('/v1/me')).toBe('200');
  });

  it('read class: readRequestsPerMinute requests a minute on /me and single records', async () => {
    await h.rebuild({ keyCacheMs: 0, readRequestsPerMinute: 2 });
    expect(await answer('/v1/me')).toBe('200');
    expect(await answer('/v1/teams/team_a1')).toBe('200');
    expect(await answer('/v1/me')).toMatch(/^429 rate_limited retry=\d+$/);
  });

  it('daily quota: lists count their items, /me does not; 429 quota_exceeded with Retry-After to 00:00 UTC; reset at midnight', async () => {
    await h.rebuild({ keyCacheMs: 0, dailyItemQuota: 4 });
    h.clock.set('2026-01-15T23:00:00.000Z');
    expect(await answer('/v1/teams')).toBe('200');
    expect(await answer('/v1/teams')).toBe('200');
    expect(await answer('/v1/teams')).toBe('429 quota_exceeded retry=3600');
    expect(await answer('/v1/members', { headers: TEAM })).toBe('429 quota_exceeded retry=3600');
    expect(await answer('/v1/me')).toBe('200');
    expect(await answer('/v1/teams/team_a1')).toBe('200');
    h.clock.set('2026-01-15T23:59:59.200Z');
    expect(await answer('/v1/teams')).toBe('429 quota_exceeded retry=1');
    h.clock.set('2026-01-16T00:00:00.000Z');
    expect(await answer('/v1/teams')).toBe('200');
  });

  it('firewall: more than firewallRequestsPerMinute requests without a well-formed key: plain 429 for the address', async () => {
    await h.rebuild({ keyCacheMs: 0, firewallRequestsPerMinute: 3 });
    for (let i = 0; i < 3; i++)
      expect(await answer('/v1/me', { key: undefined, ip: '203.0.113.77' })).toBe('401 invalid_credentials');
    expect(await answer('/v1/me', { ip: '203.0.113.77' })).toBe('200');
    expect((await h.inject('/v1/me', { key: undefined, ip: '203.0.113.77' })).statusCode).toBe(429);
    // once blocked, every request from the address gets the firewall's bare 429, a valid key included
    const blocked = await h.inject('/v1/me', { ip: '203.0.113.77' });
    expect(blocked.statusCode).toBe(429);
    expect(blocked.body).toBe('');
    expect(blocked.headers['retry-after']).toBeUndefined();
    h.clock.advance(600_000);
    expect(await answer('/v1/me', { ip: '203.0.113.78' })).toBe('200');
  });

  describe('every request is paid for', () => {
    it('GET /calls/call_nope repeated 601 times in a minute answers 429 rate_limited (read class)', async () => {
      for (let i = 1; i <= 600; i++) expect(await answer('/v1/calls/call_nope')).toBe('404 resource_missing');
      expect(await answer('/v1/calls/call_nope')).toMatch(/^429 rate_limited retry=\d+$/);
      expect(await answer('/v1/me')).toMatch(/^429 rate_limited/);
    });

    it('a refused team is charged: a 403 keeps one item, so the next full-size request is refused with 429', async () => {
      await h.rebuild({ keyCacheMs: 0, itemsPerMinute: 25 });
      await changeTeam(h.store, 'team_a1', { field: 'state', value: 'disabled' });
      expect(await answer('/v1/leads?limit=25', { headers: TEAM })).toBe('403 team_state_restricted');
      expect((await h.access.usage(h.integrationId, [])).itemsThisMinute).toBe(1);
      expect(await answer('/v1/leads?limit=25', { headers: TEAM })).toMatch(/^429 rate_limited retry=\d+$/);
      expect(await answer('/v1/leads?limit=24', { headers: TEAM })).toBe('403 team_state_restricted');
    });

    it('an unknown lead and a team the key does not read are charged before any lookup, and count nothing toward the quota', async () => {
      expect(await answer('/v1/leads/lead_nope/activities?limit=10')).toBe('404 resource_missing');
      expect(await answer('/v1/leads/lead_nope')).toBe('404 resource_missing');
      expect(await answer('/v1/calls', { headers: { 'service-team': 'team_solo' } })).toBe('404 team_not_accessible');
      const usage = await h.access.usage(h.integrationId, []);
      expect(usage).toMatchObject({ itemsThisMinute: 2, readsThisMinute: 1, quotaUsedToday: 0 });
    });

    it('validation errors (an out-of-range limit, two filters) answer 400 before any reservation', async () => {
      await h.rebuild({ keyCacheMs: 0, itemsPerMinute: 3 });
      for (let i = 0; i < 10; i++) {
        expect(await answer('/v1/leads?limit=0', { headers: TEAM })).toBe('400 invalid_request');
        expect(await answer('/v1/leads?board=b&stage=s', { headers: TEAM })).toBe('400 invalid_request');
      }
      expect((await h.access.usage(h.integrationId, [])).itemsThisMinute).toBe(0);
    });

    it('never-paged lists are charged their real item count: 150 members take 150 items, so the next request gets 429', async () => {
      await h.rebuild({ keyCacheMs: 0, itemsPerMinute: 200 });
      const members = Array.from({ length: 150 }, (_, i) => `mem_${String(i).padStart(4, '0')}`);
      await putPlainRecords(h.store, 'member', 'team_a1', members);
      const res = await h.inject('/v1/members', { headers: TEAM });
      expect(res.statusCode).toBe(200);
      expect(res.json().data).toHaveLength(150);
      expect(await h.access.usage(h.integrationId, [])).toMatchObject({ itemsThisMinute: 150, quotaUsedToday: 150 });
      expect(await answer('/v1/members', { headers: TEAM })).toMatch(/^429 rate_limited retry=\d+$/);
    });
  });
});
