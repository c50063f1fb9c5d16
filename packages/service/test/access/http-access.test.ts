import { afterEach, beforeEach, expect, it } from 'vitest';
import { changeAllowlist, revokeIntegration } from '../../src/access/integrations.js';
import { endOldKey, rollKey } from '../../src/access/keys.js';
import { changeTeam, setOrganizationPlan } from '../../src/access/organizations.js';
import { API_REALM } from '../../src/service-names.js';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { putMeta } from '../support/meta.js';
import { type AccessHarness, accessHarness } from './http-harness.js';

const wrongSecret = (key: string) => `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;

describeEachBackend('authentication through HTTP', (makeStore) => {
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

  const code = async (url: string, options?: Parameters<AccessHarness['inject']>[1]) => {
    const res = await h.inject(url, options);
    return res.statusCode === 200 ? '200' : `${res.statusCode} ${res.json().code}`;
  };

  it('GET /v1/me shows the integration, key last4, the teams the key reads today and the five scopes', async () => {
    const res = await h.inject('/v1/me');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      object: 'integration',
      id: h.integrationId,
      livemode: true,
      name: 'Warehouse',
      key: { last4: h.key.slice(-4) },
      teams: ['team_a1', 'team_a2'],
      scopes: ['teams:read', 'crm:read', 'calls:read', 'messages:read', 'calendar:read'],
    });
  });

  it('every 401 carries WWW-Authenticate: Bearer realm=...', async () => {
    for (const key of [undefined, 'Bearer x', wrongSecret(h.key), h.key.replace('crmx_live_', 'crmx_test_')]) {
      const res = await h.inject('/v1/me', { key });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('invalid_credentials');
      expect(res.headers['www-authenticate']).toBe(`Bearer realm="${API_REALM}"`);
    }
    await rollKey(h.store, h.clock, h.integrationId, { grace: '1h' });
    h.clock.advance(3_600_000);
    const expired = await h.inject('/v1/me');
    expect(`${expired.statusCode} ${expired.json().code}`).toBe('401 key_expired');
    expect(expired.headers['www-authenticate']).toBe(`Bearer realm="${API_REALM}"`);
  });

  it('400 secret_key_in_browser for a secret key with an Origin header', async () => {
    expect(await code('/v1/me', { headers: { origin: 'https://app.example' } })).toBe('400 secret_key_in_browser');
  });

  it('key lifecycle through HTTP: grace, expired, roll again, end old key, revoke', async () => {
    const first = h.key;
    const second = `Bearer ${(await rollKey(h.store, h.clock, h.integrationId)).key}`;
    expect(await code('/v1/me', { key: first })).toBe('200');
    h.clock.advance(86_400_000);
    expect(await code('/v1/me', { key: first })).toBe('401 key_expired');
    const third = `Bearer ${(await rollKey(h.store, h.clock, h.integrationId, { grace: '7d' })).key}`;
    expect(await code('/v1/me', { key: second })).toBe('200');
    await endOldKey(h.store, h.clock, h.integrationId);
    expect(await code('/v1/me', { key: second })).toBe('401 invalid_credentials');
    const res = await h.inject('/v1/me', { key: third });
    expect(res.json().key.last4).toBe(third.slice(-4));
    await revokeIntegration(h.store, h.clock, h.integrationId);
    expect(await code('/v1/me', { key: third })).toBe('401 invalid_credentials');
  });

  it('a revoked key stops within 5 seconds with the default key cache', async () => {
    await h.rebuild({});
    expect(await code('/v1/me')).toBe('200');
    await revokeIntegration(h.store, h.clock, h.integrationId);
    h.clock.advance(5000);
    expect(await code('/v1/me')).toBe('401 invalid_credentials');
  });

  it('403 ip_not_allowed outside the allowlist; a wrong key still gets 401 from anywhere', async () => {
    await changeAllowlist(h.store, h.integrationId, 'set', ['198.51.100.0/24']);
    expect(await code('/v1/me', { ip: '198.51.100.4' })).toBe('200');
    expect(await code('/v1/me', { ip: '203.0.113.4' })).toBe('403 ip_not_allowed');
    expect(await code('/v1/me', { ip: '203.0.113.4', key: wrongSecret(h.key) })).toBe('401 invalid_credentials');
  });

  it('team eligibility at request time: plan_not_entitled, team_state_restricted (still listed by /teams), sector_restricted', async () => {
    const team = { headers: { 'service-team': 'team_a1' } };
    expect(await code('/v1/members', team)).toBe('200');
    await changeTeam(h.store, 'team_a1', { field: 'state', value: 'billing_only' });
    expect(await code('/v1/members', team)).toBe('403 team_state_restricted');
    expect((await h.inject('/v1/teams')).json().data.map((t: { id: string }) => t.id)).toEqual(['team_a1', 'team_a2']);
    await changeTeam(h.store, 'team_a1', { field: 'state', value: 'active' });
    await changeTeam(h.store, 'team_a1', { field: 'sensitiveSector', value: true });
    expect(await code('/v1/members', team)).toBe('403 sector_restricted');
    await setOrganizationPlan(h.store, 'org_a', { plan: 'no_api' });
    expect(await code('/v1/members', team)).toBe('403 plan_not_entitled');
  });

  it('a team that changes organization: 404 team_not_accessible and /teams no longer lists it', async () => {
    await changeTeam(h.store, 'team_a2', { field: 'organization', value: 'org_b' });
    expect(await code('/v1/members', { headers: { 'service-team': 'team_a2' } })).toBe('404 team_not_accessible');
    expect((await h.inject('/v1/teams')).json().data.map((t: { id: string }) => t.id)).toEqual(['team_a1']);
    expect((await h.inject('/v1/me')).json().teams).toEqual(['team_a1']);
  });

  it('operator switches: 503 api_disabled and 403 capability_disabled per endpoint', async () => {
    await putMeta(h.store, 'capability_disabled', 'members.list');
    expect(await code('/v1/members', { headers: { 'service-team': 'team_a1' } })).toBe('403 capability_disabled');
    expect(await code('/v1/me')).toBe('200');
    await putMeta(h.store, 'api_disabled', 'true');
    expect(await code('/v1/me')).toBe('503 api_disabled');
  });
});
