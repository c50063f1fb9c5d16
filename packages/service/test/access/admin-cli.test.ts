import { Command } from 'commander';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { parseKey } from '../../src/access/keys.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { registerAdminCommands } from '../../src/cli/admin.js';
import { ManualClock } from '../../src/clock.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { captureOutput, releaseOutput } from '../support/captured-output.js';
import { seedOrganization, seedTeam } from './fixtures.js';

describeEachBackend('crm-export admin', (makeStore) => {
  let store: Store;
  let out: string[];
  beforeEach(async () => {
    store = await makeStore();
    await seedOrganization(store, 'org_a');
    await seedTeam(store, 'team_a1', { organization: 'org_a' });
    await seedTeam(store, 'team_a2', { organization: 'org_a' });
    out = [];
    captureOutput((chunk) => out.push(chunk));
  });
  afterEach(async () => {
    releaseOutput();
    await store.close();
  });

  /** Runs `crm-export admin ...` against the test store and returns what it printed. */
  async function admin(...args: string[]): Promise<string> {
    out = [];
    const program = new Command('crm-export').exitOverride();
    registerAdminCommands(program, async () => ({ store, close: async () => {} }));
    await program.parseAsync(['admin', ...args], { from: 'user' });
    return out.join('');
  }
  const json = async (...args: string[]) => JSON.parse(await admin(...args, '--json'));

  it('admin teams list --json lists every team with its eligibility', async () => {
    const teams = await json('teams', 'list');
    expect(teams).toEqual([
      expect.objectContaining({ id: 'team_a1', organization: 'org_a', state: 'active', holdsData: true }),
      expect.objectContaining({ id: 'team_a2', organization: 'org_a', legalSetupDone: true, sensitiveSector: false }),
    ]);
  });

  it('admin integrations create --json prints the key once, in a key field; list never shows it', async () => {
    const created = await json('integrations', 'create', '--teams', 'team_a1,team_a2', '--name', 'Warehouse');
    expect(created.key).toMatch(/^crmx_live_/);
    expect(created.integration).toMatchObject({ name: 'Warehouse', teams: ['team_a1', 'team_a2'], status: 'active' });
    const listed = await admin('integrations', 'list', '--json');
    expect(listed).toContain(created.integration.id);
    expect(listed).not.toContain(created.key);
    expect(JSON.parse(listed)[0].keys[0]).toMatchObject({
      id: parseKey(created.key)!.lookupId,
      last4: created.key.slice(-4),
    });
  });

  it('roll prints a new key; end-old-key, allowlist and revoke never print one', async () => {
    const { integration, key } = await json('integrations', 'create', '--teams', 'team_a1', '--name', 'R');
    const rolled = await json('integrations', 'roll', integration.id, '--grace', '1h');
    expect(rolled.key).toMatch(/^crmx_live_/);
    expect(rolled.key).not.toBe(key);
    expect(rolled.oldKeyId).toBe(parseKey(key)!.lookupId);
    const ended = await admin('integrations', 'end-old-key', integration.id, '--yes', '--json');
    expect(JSON.parse(ended).revoked).toEqual([parseKey(key)!.lookupId]);
    const allow = await json('integrations', 'allowlist', 'set', integration.id, '192.0.2.0/24', '198.51.100.7');
    expect(allow.allowlist).toEqual(['192.0.2.0/24', '198.51.100.7']);
    const revoked = await admin('integrations', 'revoke', integration.id, '--yes', '--json');
    expect(JSON.parse(revoked).status).toBe('revoked');
    for (const text of [ended, revoked]) expect(text).not.toMatch(/crmx_live_/);
  });

  it('text lists start with a header row naming the columns; an empty list prints (none)', async () => {
    const columns = (line: string | undefined) => line?.split(/\s{2,}/);
    expect(await admin('integrations', 'list')).toBe('(none)\n');
    const { integration } = await json('integrations', 'create', '--teams', 'team_a1', '--name', 'Warehouse');
    const integrations = (await admin('integrations', 'list')).trimEnd().split('\n');
    expect(columns(integrations[0])).toEqual(['ID', 'NAME', 'STATUS', 'TEAMS', 'ALLOWLIST', 'KEYS']);
    expect(columns(integrations[1])?.slice(0, 5)).toEqual([
      integration.id,
      'Warehouse',
      'active',
      'team_a1',
      'any address',
    ]);
    expect(integrations).toHaveLength(2);
    const orgs = (await admin('orgs', 'list')).trimEnd().split('\n');
    expect(columns(orgs[0])).toEqual(['ID', 'NAME', 'PLAN', 'API AGREED']);
    expect(orgs).toHaveLength(2);
    const teams = (await admin('teams', 'list')).trimEnd().split('\n');
    expect(columns(teams[0])).toEqual(['ID', 'ORGANIZATION', 'STATE', 'LEGAL SETUP', 'SECTOR', 'DATA', 'MODE']);
    expect(columns(teams[1])?.slice(0, 3)).toEqual(['team_a1', 'org_a', 'active']);
    expect(teams).toHaveLength(3);
    // Every cell starts where its header starts.
    expect(teams[1]?.indexOf('org_a')).toBe(teams[0]?.indexOf('ORGANIZATION'));
  });

  it('a refusal is printed as an error with exit code 1', async () => {
    await json('teams', 'set-state', 'team_a1', 'api_paused');
    const refused = await json('integrations', 'create', '--teams', 'team_a1', '--name', 'x');
    expect(refused.error.code).toBe('team_state_restricted');
    expect(process.exitCode).toBe(1);
  });

  it('orgs create, set-plan and teams set-org, set-sector, set-legal change what eligibility reads', async () => {
    const org = await json('orgs', 'create', 'Beta Ltd', '--id', 'org_b', '--plan', 'no_api');
    expect(org).toEqual({ id: 'org_b', name: 'Beta Ltd', plan: 'no_api', apiAgreed: false });
    expect(await json('orgs', 'set-plan', 'org_b', 'no_api', '--api-agreed', 'yes')).toMatchObject({ apiAgreed: true });
    expect(await json('teams', 'set-org', 'team_a2', 'org_b')).toMatchObject({ organization: 'org_b' });
    expect(await json('teams', 'set-sector', 'team_a2', 'yes')).toMatchObject({ sensitiveSector: true });
    expect(await json('teams', 'set-legal', 'team_a2', 'no')).toMatchObject({ legalSetupDone: false });
    expect((await json('orgs', 'list')).map((o: { id: string }) => o.id)).toEqual(['org_a', 'org_b']);
  });

  it('switches: api off answers api_disabled, capability off per endpoint; list shows them', async () => {
    expect(await json('switches', 'api', 'off')).toEqual({ apiDisabled: true, capabilitiesDisabled: [] });
    expect(await store.getMeta('api_disabled')).toBe('true');
    await json('switches', 'api', 'on');
    await json('switches', 'capability', 'leads.list', 'off');
    expect(await json('switches', 'capability', 'sync.changes', 'off')).toEqual({
      apiDisabled: false,
      capabilitiesDisabled: ['leads.list', 'sync.changes'],
    });
    expect(await json('switches', 'capability', 'leads.list', 'on')).toMatchObject({
      capabilitiesDisabled: ['sync.changes'],
    });
  });

  it('usage without Redis says the counters are per process; with REDIS_URL it reads the shared counters', async () => {
    const { integration } = await json('integrations', 'create', '--teams', 'team_a1', '--name', 'U');
    const saved = process.env.REDIS_URL;
    delete process.env.REDIS_URL;
    try {
      expect(await json('integrations', 'usage', integration.id)).toMatchObject({ shared: false });
    } finally {
      if (saved !== undefined) process.env.REDIS_URL = saved;
    }
    if (!saved) return;
    const prefix = `crmx-test-usage-${process.pid}-${Date.now()}`;
    const redis = new Redis(saved, { enableOfflineQueue: false });
    await new Promise((resolve) => redis.once('ready', resolve));
    try {
      const clock = new ManualClock(Date.now());
      const access = new StoreAccessControl({ store, clock, limits: DEFAULT_LIMITS, redis, redisPrefix: prefix });
      const { key } = await json('integrations', 'roll', integration.id);
      const principal = await access.authenticate({
        authorization: `Bearer ${key}`,
        origin: undefined,
        ip: '192.0.2.1',
      });
      await (await access.reserve(principal, 'sync', 100, true)).settle(42);
      const oldKeyId = integration.keys[0].id;
      for (let i = 0; i < 3; i++) {
        const wrong = `crmx_live_${oldKeyId}${'Q'.repeat(32)}`;
        await access
          .authenticate({ authorization: `Bearer ${wrong}`, origin: undefined, ip: '192.0.2.1' })
          .catch(() => {});
      }
      const usage = await json('integrations', 'usage', integration.id, '--redis-prefix', prefix);
      expect(usage).toMatchObject({ shared: true, itemsThisMinute: 42, quotaUsedToday: 42 });
      expect(usage.keys[0]).toEqual({ id: oldKeyId, failures: 3, lockedUntil: null });
      const leftovers = await redis.keys(`${prefix}*`);
      if (leftovers.length) await redis.del(...leftovers);
    } finally {
      redis.disconnect();
    }
  });
});
