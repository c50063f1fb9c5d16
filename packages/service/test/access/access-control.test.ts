import { afterEach, beforeEach, expect, it } from 'vitest';
import type { AccessControl, AccessRequest } from '../../src/access/access-control.js';
import { changeAllowlist, createIntegration, revokeIntegration } from '../../src/access/integrations.js';
import { endOldKey, rollKey } from '../../src/access/keys.js';
import { changeTeam, setOrganizationPlan } from '../../src/access/organizations.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { ManualClock } from '../../src/clock.js';
import { ApiError } from '../../src/errors/catalogue.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { putMeta } from '../support/meta.js';
import { seedOrganization, seedTeam } from './fixtures.js';

/** The code (and Retry-After) an access call fails with, or 'ok'. */
async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error.retryAfter === undefined ? error.code : `${error.code} ${error.retryAfter}`;
  }
}

const wrongSecret = (key: string) => `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;

describeEachBackend('access control: authentication and team eligibility', (makeStore) => {
  let store: Store;
  let clock: ManualClock;
  let access: AccessControl;
  let key: string;
  let integrationId: string;
  const limits: Limits = { ...DEFAULT_LIMITS };
  const req = (authorization: string | undefined, over: Partial<AccessRequest> = {}): AccessRequest => ({
    authorization,
    origin: undefined,
    ip: '192.0.2.10',
    ...over,
  });
  const auth = (authorization: string | undefined, over: Partial<AccessRequest> = {}) =>
    outcome(access.authenticate(req(authorization, over)));

  beforeEach(async () => {
    store = await makeStore();
    clock = new ManualClock();
    await seedOrganization(store, 'org_a');
    await seedOrganization(store, 'org_b');
    await seedTeam(store, 'team_a1', { organization: 'org_a' });
    await seedTeam(store, 'team_a2', { organization: 'org_a' });
    await seedTeam(store, 'team_solo');
    const created = await createIntegration(store, clock, { teams: ['team_a1', 'team_a2'], name: 'Warehouse' });
    key = `Bearer ${created.key}`;
    integrationId = created.integration.id;
    access = new StoreAccessControl({ store, clock, limits });
  });
  afterEach(() => store.close());

  it('a valid key gives the principal: integration, name, last4, teams and the five read scopes', async () => {
    const principal = await access.authenticate(req(key));
    expect(principal).toMatchObject({
      integrationId,
      name: 'Warehouse',
      livemode: true,
      last4: key.slice(-4),
      teams: ['team_a1', 'team_a2'],
      scopes: ['teams:read', 'crm:read', 'calls:read', 'messages:read', 'calendar:read'],
    });
    expect(principal.keyId).toBe(key.slice('Bearer crmx_live_'.length, 'Bearer crmx_live_'.length + 12));
  });

  it('missing or malformed Authorization, unknown, wrong and test keys: 401 invalid_credentials', async () => {
    expect(await auth(undefined)).toBe('invalid_credentials');
    expect(await auth('Basic abc')).toBe('invalid_credentials');
    expect(await auth('Bearer')).toBe('invalid_credentials');
    expect(await auth('Bearer crmx_live_short')).toBe('invalid_credentials');
    expect(await auth(`Bearer crmx_live_${'a'.repeat(44)}`)).toBe('invalid_credentials');
    expect(await auth(wrongSecret(key))).toBe('invalid_credentials');
    expect(await auth(key.replace('crmx_live_', 'crmx_test_'))).toBe('invalid_credentials');
    expect(await auth(key)).toBe('ok');
  });

  it('a secret key with an Origin header: 400 secret_key_in_browser, even a wrong or test key', async () => {
    expect(await auth(key, { origin: 'https://app.example' })).toBe('secret_key_in_browser');
    expect(await auth(wrongSecret(key), { origin: 'https://app.example' })).toBe('secret_key_in_browser');
    expect(await auth('Bearer crmx_test_abc', { origin: 'https://app.example' })).toBe('secret_key_in_browser');
    expect(await auth(undefined, { origin: 'https://app.example' })).toBe('invalid_credentials');
  });

  it('key lifecycle: old key works in grace, 401 key_expired after it; roll again, compromised, end old key: invalid_credentials', async () => {
    const limitsNoCache = { ...limits, keyCacheMs: 0 };
    access = new StoreAccessControl({ store, clock, limits: limitsNoCache });
    const rolled = await rollKey(store, clock, integrationId, { grace: '1h' });
    const second = `Bearer ${rolled.key}`;
    expect(await auth(key)).toBe('ok');
    expect(await auth(second)).toBe('ok');
    clock.advance(3_600_000 - 1);
    expect(await auth(key)).toBe('ok');
    clock.advance(1);
    expect(await auth(key)).toBe('key_expired');
    // roll again while the previous key is in grace: that key is revoked
    const third = `Bearer ${(await rollKey(store, clock, integrationId)).key}`;
    expect(await auth(second)).toBe('ok');
    await rollKey(store, clock, integrationId);
    expect(await auth(second)).toBe('invalid_credentials');
    expect(await auth(key)).toBe('key_expired');
    // end old key now
    const fourthRoll = await rollKey(store, clock, integrationId, { grace: '7d' });
    expect(await auth(`Bearer ${fourthRoll.key}`)).toBe('ok');
    const fifth = `Bearer ${(await rollKey(store, clock, integrationId, { grace: '7d' })).key}`;
    expect(await auth(`Bearer ${fourthRoll.key}`)).toBe('ok');
    await endOldKey(store, clock, integrationId);
    expect(await auth(`Bearer ${fourthRoll.key}`)).toBe('invalid_credentials');
    // roll marked compromised: the old key stops at once
    const sixth = `Bearer ${(await rollKey(store, clock, integrationId, { compromised: true })).key}`;
    expect(await auth(fifth)).toBe('invalid_credentials');
    expect(await auth(sixth)).toBe('ok');
    expect(await auth(third)).toBe('invalid_credentials');
  });

  it('on one keep-alive connection a key that matched is still refused once expired, rolled away or revoked, and a key differing only in its secret is refused after it', async () => {
    access = new StoreAccessControl({ store, clock, limits: { ...limits, keyCacheMs: 0 } });
    const connection = {};
    const on = (authorization: string) => auth(authorization, { connection });
    expect(await on(key)).toBe('ok');
    expect(await on(wrongSecret(key))).toBe('invalid_credentials');
    expect(await on(key)).toBe('ok');
    const rolled = `Bearer ${(await rollKey(store, clock, integrationId, { grace: '1h' })).key}`;
    expect(await on(rolled)).toBe('ok');
    expect(await on(key)).toBe('ok');
    clock.advance(3_600_000);
    expect(await on(key)).toBe('key_expired');
    const next = `Bearer ${(await rollKey(store, clock, integrationId, { compromised: true })).key}`;
    expect(await on(rolled)).toBe('invalid_credentials');
    expect(await on(next)).toBe('ok');
    await revokeIntegration(store, clock, integrationId);
    expect(await on(next)).toBe('invalid_credentials');
  });

  it('revoke integration: every key refused with invalid_credentials within the key cache time (at most 5 s)', async () => {
    expect(limits.keyCacheMs).toBeLessThanOrEqual(5000);
    expect(await auth(key)).toBe('ok');
    await revokeIntegration(store, clock, integrationId);
    clock.advance(limits.keyCacheMs);
    expect(await auth(key)).toBe('invalid_credentials');
  });

  it('IP allowlist: 403 ip_not_allowed only after the key verified; empty list allows any', async () => {
    await changeAllowlist(store, integrationId, 'set', ['198.51.100.0/24']);
    access = new StoreAccessControl({ store, clock, limits });
    expect(await auth(key, { ip: '198.51.100.77' })).toBe('ok');
    expect(await auth(key, { ip: '::ffff:198.51.100.77' })).toBe('ok');
    expect(await auth(key, { ip: '203.0.113.5' })).toBe('ip_not_allowed');
    expect(await auth(wrongSecret(key), { ip: '203.0.113.5' })).toBe('invalid_credentials');
    await changeAllowlist(store, integrationId, 'set', []);
    clock.advance(limits.keyCacheMs);
    expect(await auth(key, { ip: '203.0.113.5' })).toBe('ok');
  });

  it('a team that joins, leaves or changes organization drops out of the key; restricted teams stay listed', async () => {
    const solo = await createIntegration(store, clock, { teams: ['team_solo'], name: 'Solo' });
    const soloKey = `Bearer ${solo.key}`;
    access = new StoreAccessControl({ store, clock, limits: { ...limits, keyCacheMs: 0 } });
    await changeTeam(store, 'team_a2', { field: 'state', value: 'api_paused' });
    expect((await access.authenticate(req(key))).teams).toEqual(['team_a1', 'team_a2']);
    await changeTeam(store, 'team_a2', { field: 'organization', value: 'org_b' });
    const principal = await access.authenticate(req(key));
    expect(principal.teams).toEqual(['team_a1']);
    expect(await outcome(access.checkTeam(principal, 'team_a2'))).toBe('team_not_accessible');
    await changeTeam(store, 'team_solo', { field: 'organization', value: 'org_a' });
    const soloPrincipal = await access.authenticate(req(soloKey));
    expect(soloPrincipal.teams).toEqual([]);
    await changeTeam(store, 'team_a1', { field: 'organization', value: null });
    expect((await access.authenticate(req(key))).teams).toEqual([]);
  });

  it('checkTeam: 403 plan_not_entitled, team_state_restricted (every restricted state, legal setup), sector_restricted', async () => {
    access = new StoreAccessControl({ store, clock, limits: { ...limits, keyCacheMs: 0 } });
    const principal = await access.authenticate(req(key));
    expect(await outcome(access.checkTeam(principal, 'team_a1'))).toBe('ok');
    await setOrganizationPlan(store, 'org_a', { plan: 'no_api' });
    expect(await outcome(access.checkTeam(principal, 'team_a1'))).toBe('plan_not_entitled');
    await setOrganizationPlan(store, 'org_a', { apiAgreed: true });
    expect(await outcome(access.checkTeam(principal, 'team_a1'))).toBe('ok');
    for (const state of ['disabled', 'archived', 'billing_only', 'api_paused'] as const) {
      await changeTeam(store, 'team_a1', { field: 'state', value: state });
      expect(await outcome(access.checkTeam(principal, 'team_a1'))).toBe('team_state_restricted');
    }
    await changeTeam(store, 'team_a1', { field: 'state', value: 'active' });
    await changeTeam(store, 'team_a1', { field: 'legalSetupDone', value: false });
    expect(await outcome(access.checkTeam(principal, 'team_a1'))).toBe('team_state_restricted');
    await changeTeam(store, 'team_a1', { field: 'legalSetupDone', value: true });
    await changeTeam(store, 'team_a1', { field: 'sensitiveSector', value: true });
    expect(await outcome(access.checkTeam(principal, 'team_a1'))).toBe('sector_restricted');
    expect(await outcome(access.checkTeam(principal, 'team_solo'))).toBe('team_not_accessible');
  });

  it('requireScope: 403 insufficient_scope for a scope the key lacks', async () => {
    const principal = await access.authenticate(req(key));
    expect(() => access.requireScope(principal, 'crm:read')).not.toThrow();
    expect(() => access.requireScope({ ...principal, scopes: ['teams:read'] }, 'crm:read')).toThrow(
      expect.objectContaining({ code: 'insufficient_scope' }),
    );
  });

  it('operator switches: 503 api_disabled, 403 capability_disabled per endpoint, read from meta', async () => {
    access = new StoreAccessControl({ store, clock, limits: { ...limits, keyCacheMs: 2000 } });
    expect(await outcome(access.checkSwitches('GET /v1/leads'))).toBe('ok');
    await putMeta(store, 'capability_disabled', JSON.stringify(['GET /v1/leads']));
    await putMeta(store, 'api_disabled', 'true');
    expect(await outcome(access.checkSwitches('GET /v1/leads'))).toBe('ok');
    clock.advance(2000);
    expect(await outcome(access.checkSwitches('GET /v1/leads'))).toBe('api_disabled');
    await putMeta(store, 'api_disabled', 'false');
    clock.advance(2000);
    expect(await outcome(access.checkSwitches('GET /v1/leads'))).toBe('capability_disabled');
    expect(await outcome(access.checkSwitches('GET /v1/calls'))).toBe('ok');
  });
});
