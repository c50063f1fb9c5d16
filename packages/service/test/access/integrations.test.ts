import { afterEach, beforeEach, expect, it } from 'vitest';
import { allowlistAllows } from '../../src/access/allowlist.js';
import {
  changeAllowlist,
  createIntegration,
  getIntegration,
  revokeIntegration,
} from '../../src/access/integrations.js';
import { endOldKey, getPepper, keyMatches, parseKey, rollKey } from '../../src/access/keys.js';
import { changeTeam, setOrganizationPlan } from '../../src/access/organizations.js';
import { ManualClock } from '../../src/clock.js';
import { AdminError } from '../../src/errors/admin-error.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import type { Store } from '../../src/store/store.js';
import type { IntegrationState } from '../../src/write/commands/integration-state.js';
import { type ApiKeyState, KEY_PREFIX } from '../../src/write/commands/key-state.js';
import { describeEachBackend } from '../support/backends.js';
import { seedOrganization, seedTeam } from './fixtures.js';

const rejectsWith = async (promise: Promise<unknown>, code: string) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AdminError);
  expect((error as AdminError).code).toBe(code);
};

describeEachBackend('integrations and keys', (makeStore) => {
  let store: Store;
  const clock = new ManualClock();
  beforeEach(async () => {
    store = await makeStore();
    await seedOrganization(store, 'org_a');
    await seedTeam(store, 'team_a1', { organization: 'org_a' });
    await seedTeam(store, 'team_a2', { organization: 'org_a' });
    await seedTeam(store, 'team_solo');
  });
  afterEach(() => store.close());

  it('key format: crmx_live_ + 12-char lookup id + 32-char base62 secret, only the keyed digest stored', async () => {
    const { integration, key } = await createIntegration(store, clock, { teams: ['team_a1'], name: 'Sync' });
    expect(key).toMatch(/^crmx_live_[0-9A-Za-z]{44}$/);
    const lookupId = parseKey(key)?.lookupId;
    expect(lookupId).toBe(key.slice(KEY_PREFIX.length, KEY_PREFIX.length + 12));
    const stored = await store.getEntity<ApiKeyState>('api_key', lookupId!);
    expect(stored?.parent).toBe(integration.id);
    expect(JSON.stringify(stored)).not.toContain(key.slice(KEY_PREFIX.length + 12));
    expect(stored?.state.last4).toBe(key.slice(-4));
    const pepper = await getPepper(store);
    expect(keyMatches(pepper, key, stored!.state.digest)).toBe(true);
    // Another last character (never the same one, whatever the key ends with).
    const wrong = `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}`;
    expect(keyMatches(pepper, wrong, stored!.state.digest)).toBe(false);
    expect(integration.id).toMatch(/^prn_[0-9A-Za-z]+$/);
    expect(integration.keys).toEqual([expect.objectContaining({ id: lookupId, status: 'active' })]);
  });

  it('an integration covers an explicit list of teams of one organization', async () => {
    const { integration } = await createIntegration(store, clock, { teams: ['team_a1', 'team_a2'], name: 'Both' });
    expect(integration.teams).toEqual(['team_a1', 'team_a2']);
    expect(integration.organization).toBe('org_a');
    await rejectsWith(
      createIntegration(store, clock, { teams: ['team_a1', 'team_solo'], name: 'x' }),
      'teams_span_organizations',
    );
  });

  it('eligibility at creation: plan, team state, legal setup, sector, holds data', async () => {
    await setOrganizationPlan(store, 'org_a', { plan: 'no_api' });
    await rejectsWith(createIntegration(store, clock, { teams: ['team_a1'], name: 'x' }), 'plan_not_entitled');
    await setOrganizationPlan(store, 'org_a', { apiAgreed: true });
    await createIntegration(store, clock, { teams: ['team_a1'], name: 'agreed' });
    for (const state of ['disabled', 'archived', 'billing_only', 'api_paused'] as const) {
      await changeTeam(store, 'team_solo', { field: 'state', value: state });
      await rejectsWith(createIntegration(store, clock, { teams: ['team_solo'], name: 'x' }), 'team_state_restricted');
    }
    await changeTeam(store, 'team_solo', { field: 'state', value: 'active' });
    await changeTeam(store, 'team_solo', { field: 'legalSetupDone', value: false });
    await rejectsWith(createIntegration(store, clock, { teams: ['team_solo'], name: 'x' }), 'legal_setup_incomplete');
    await changeTeam(store, 'team_solo', { field: 'legalSetupDone', value: true });
    await changeTeam(store, 'team_solo', { field: 'sensitiveSector', value: true });
    await rejectsWith(createIntegration(store, clock, { teams: ['team_solo'], name: 'x' }), 'sector_restricted');
    await seedTeam(store, 'team_empty', {}, { holdsData: false });
    await rejectsWith(createIntegration(store, clock, { teams: ['team_empty'], name: 'x' }), 'holds_no_data');
    await rejectsWith(createIntegration(store, clock, { teams: ['team_nowhere'], name: 'x' }), 'not_found');
    await store.write((tx) =>
      tx.putRecord({
        kind: 'lead',
        id: 'lead_1',
        team: 'team_empty',
        lead: null,
        board: null,
        stage: null,
        status: 'new',
        email: null,
        phone: null,
        version: 1,
        updatedAt: '2026-01-15T09:00:00.000Z',
        json: '{}',
      }),
    );
    await createIntegration(store, clock, { teams: ['team_empty'], name: 'a team with a lead holds data' });
  });

  it('at most 10 active integrations per organization (or team outside one); revoked ones do not count', async () => {
    const limits = { ...DEFAULT_LIMITS };
    const made = [];
    for (let i = 0; i < 10; i++) {
      made.push(
        await createIntegration(store, clock, { teams: [i % 2 ? 'team_a1' : 'team_a2'], name: `n${i}`, limits }),
      );
    }
    await rejectsWith(
      createIntegration(store, clock, { teams: ['team_a1'], name: 'eleventh' }),
      'too_many_integrations',
    );
    await createIntegration(store, clock, { teams: ['team_solo'], name: 'other parent' });
    await revokeIntegration(store, clock, made[0]!.integration.id);
    await createIntegration(store, clock, { teams: ['team_a1'], name: 'after a revoke' });
  });

  it('roll: old key in grace (24 hours by default), roll again revokes it, end old key revokes it', async () => {
    const { integration, key: first } = await createIntegration(store, clock, { teams: ['team_a1'], name: 'r' });
    const firstId = parseKey(first)!.lookupId;
    const roll1 = await rollKey(store, clock, integration.id);
    expect(roll1.oldKeyId).toBe(firstId);
    expect(roll1.graceEndsAt).toBe(new Date(clock.now() + 86_400_000).toISOString());
    let view = await getIntegration(store, clock, integration.id);
    expect(view.keys.map((k) => k.status)).toEqual(['grace', 'active']);
    clock.advance(86_400_000);
    view = await getIntegration(store, clock, integration.id);
    expect(view.keys.map((k) => k.status)).toEqual(['expired', 'active']);
    await rollKey(store, clock, integration.id, { grace: '1h' });
    await rollKey(store, clock, integration.id, { grace: '7d' });
    view = await getIntegration(store, clock, integration.id);
    expect(view.keys.map((k) => k.status)).toEqual(['expired', 'revoked', 'grace', 'active']);
    await endOldKey(store, clock, integration.id);
    view = await getIntegration(store, clock, integration.id);
    expect(view.keys.map((k) => k.status)).toEqual(['expired', 'revoked', 'revoked', 'active']);
    await rejectsWith(endOldKey(store, clock, integration.id), 'no_key_in_grace');
    await rollKey(store, clock, integration.id, { compromised: true });
    view = await getIntegration(store, clock, integration.id);
    expect(view.keys.map((k) => k.status)).toEqual(['expired', 'revoked', 'revoked', 'revoked', 'active']);
  });

  it('revoke integration is irreversible and revokes every key', async () => {
    const { integration } = await createIntegration(store, clock, { teams: ['team_a1'], name: 'r' });
    await rollKey(store, clock, integration.id);
    const revoked = await revokeIntegration(store, clock, integration.id);
    expect(revoked.status).toBe('revoked');
    expect(revoked.keys.every((k) => k.status === 'revoked')).toBe(true);
    await rejectsWith(rollKey(store, clock, integration.id), 'integration_revoked');
    await rejectsWith(revokeIntegration(store, clock, integration.id), 'integration_revoked');
    await rejectsWith(changeAllowlist(store, integration.id, 'set', []), 'integration_revoked');
  });

  it('allowlist: set, add, remove; at most 20 entries', async () => {
    const { integration } = await createIntegration(store, clock, { teams: ['team_a1'], name: 'a' });
    expect(await changeAllowlist(store, integration.id, 'set', ['10.0.0.0/8', '192.0.2.7'])).toEqual([
      '10.0.0.0/8',
      '192.0.2.7',
    ]);
    expect(await changeAllowlist(store, integration.id, 'add', ['198.51.100.0/24'])).toHaveLength(3);
    expect(await changeAllowlist(store, integration.id, 'remove', ['10.0.0.0/8'])).toEqual([
      '192.0.2.7',
      '198.51.100.0/24',
    ]);
    const twenty = Array.from({ length: 20 }, (_, i) => `192.0.2.${i + 1}`);
    expect(await changeAllowlist(store, integration.id, 'set', twenty)).toHaveLength(20);
    await rejectsWith(changeAllowlist(store, integration.id, 'add', ['203.0.113.1']), 'invalid_argument');
    const stored = await store.getEntity<IntegrationState>('integration', integration.id);
    expect(stored?.state.allowlist).toHaveLength(20);
  });

  it('allowlist rules: network address, /0 refused, IPv6 never matches, empty allows any', async () => {
    const { integration } = await createIntegration(store, clock, { teams: ['team_a1'], name: 'a' });
    await rejectsWith(changeAllowlist(store, integration.id, 'set', ['10.0.0.1/8']), 'invalid_argument');
    await rejectsWith(changeAllowlist(store, integration.id, 'set', ['0.0.0.0/0']), 'invalid_argument');
    await rejectsWith(changeAllowlist(store, integration.id, 'set', ['::/0']), 'invalid_argument');
    await rejectsWith(changeAllowlist(store, integration.id, 'set', ['10.0.0']), 'invalid_argument');
    await rejectsWith(changeAllowlist(store, integration.id, 'set', ['not an address']), 'invalid_argument');
    const list = await changeAllowlist(store, integration.id, 'set', ['10.1.0.0/16', '2001:db8::/32', '::ffff:0:0/96']);
    expect(allowlistAllows(list, '10.1.200.3')).toBe(true);
    expect(allowlistAllows(list, '::ffff:10.1.200.3')).toBe(true);
    expect(allowlistAllows(list, '10.2.0.1')).toBe(false);
    expect(allowlistAllows(list, '2001:db8::1')).toBe(false);
    expect(allowlistAllows(['2001:db8::/32'], '2001:db8::1')).toBe(false);
    expect(allowlistAllows([], '203.0.113.9')).toBe(true);
    expect(allowlistAllows(['192.0.2.7'], '192.0.2.7')).toBe(true);
    expect(allowlistAllows(['192.0.2.7'], '192.0.2.8')).toBe(false);
  });
});
