import { afterEach, expect, it } from 'vitest';
import type { EntityKind, Store } from '../../../src/store/store.js';
import { COMMANDS, type CommandInput, type CommandName, runCommand } from '../../../src/write/commands/commands.js';
import type { TeamState } from '../../../src/write/types.js';
import { describeEachBackend } from '../../support/backends.js';
import { newLead, OTHER_TEAM, T0, TEAM, type World, world } from '../events/fixture.js';

// The command table (write/commands/commands.ts): every transaction command gives the same result when its
// callback runs twice, as PostgreSQL runs it again after a serialization failure or a deadlock.

const ROLLED_BACK = new Error('first attempt rolled back');

/** A store whose `write` runs each callback once in a transaction it rolls back, then again for real. */
function retrying(store: Store): Store {
  return new Proxy(store, {
    get(target, member) {
      if (member === 'write') {
        return async <T>(fn: Parameters<Store['write']>[0]): Promise<T> => {
          await target
            .write(async (tx) => {
              await fn(tx);
              throw ROLLED_BACK;
            })
            .catch((error: unknown) => {
              if (error !== ROLLED_BACK) throw error;
            });
          return target.write(fn) as Promise<T>;
        };
      }
      const value = Reflect.get(target, member, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const NOW = Date.parse('2026-01-15T09:00:00.000Z');
const HOUR = 60 * 60 * 1000;
const session = (id: string, now: number) => ({
  id: `session_${id}`,
  tokenId: 'tokenlookup1',
  tokenName: 'me',
  csrf: `csrf-${id}`,
  now,
  maxAgeMs: 24 * HOUR,
  idleBefore: now - 8 * HOUR,
});
const key = (id: string) => ({
  keyId: id.repeat(12).slice(0, 12),
  digest: `digest-${id}`,
  last4: `${id}${id}${id}${id}`,
});

/**
 * One run of every transaction command, the same inputs each time (ids, keys, tokens and times drawn
 * here); each run gets its own input objects, so a command changing its input shows.
 */
const script = (): { [N in CommandName]?: CommandInput<N> }[] => [
  { 'organization.create': { id: 'org_new', name: 'New', plan: 'api_included', apiAgreed: false } },
  { 'organization.set_plan': { id: 'org_2', plan: 'api_included', apiAgreed: true } },
  { 'team.holds_data': { id: TEAM, holds: true } },
  { 'team.change': { id: OTHER_TEAM, change: { field: 'organization', value: 'org_new' } } },
  {
    'integration.create': {
      id: 'prn_one',
      teams: [TEAM],
      name: 'One',
      allowlist: ['10.0.0.0/8'],
      activeIntegrations: 5,
      key: key('A'),
      now: NOW,
    },
  },
  { 'integration.allowlist': { id: 'prn_one', action: 'add', entries: ['192.168.1.1'], allowlistSize: 10 } },
  { 'key.roll': { integration: 'prn_one', grace: '1h', compromised: false, key: key('B'), now: NOW + 1000 } },
  { 'key.end_old': { integration: 'prn_one', now: NOW + 2000 } },
  { 'secret.pepper': { fresh: 'pepper-1' } },
  { 'secret.pepper': { fresh: 'pepper-2' } },
  { 'secret.cursor': { fresh: 'cursor-1' } },
  { 'switch.api_disabled': { disabled: true } },
  { 'switch.capability_disabled': { endpoint: 'leads.list', disabled: true } },
  { 'sandbox.team': { team: TEAM, change: 'cursors', refusal: 'resync_required', tokens: ['tok1', 'tok2'] } },
  { 'sandbox.team': { team: TEAM, change: 'cursors', refusal: 'sync_cursor_expired', tokens: ['tok1', 'tok2'] } },
  { 'sandbox.team': { team: TEAM, change: 'not_ready', until: NOW + 60_000 } },
  { 'sandbox.team': { team: TEAM, change: 'capability', endpoint: 'calls.list', off: true } },
  { 'sandbox.integration': { integration: 'prn_one', fault: 'lockedUntil', until: NOW + 5000 } },
  { 'sandbox.team': { team: TEAM, change: 'clear' } },
  { 'sandbox.clear_integrations': { integrations: ['prn_one'] } },
  { 'capture.request': { teams: [TEAM, OTHER_TEAM], now: NOW } },
  { 'capture.prepare_leads': { leads: ['lead_1', 'lead_gone'], now: NOW } },
  { 'capture.complete': { team: TEAM, now: NOW + 3000 } },
  { 'feed.mark_restore': { tokens: ['epoch1', 'epoch2'] } },
  { 'feed.mark_restore': { tokens: ['epoch1', 'epoch2'] } },
  { 'integration.revoke': { id: 'prn_one', now: NOW + 4000 } },
  { 'start.record': { record: { teams: [TEAM], integration: 'prn_one' } } },
  { 'data.republish': { kind: 'lead', ids: ['lead_1', 'lead_gone'], now: NOW + 5000 } },
  { 'data.step_applied': { name: '0001_step', now: NOW + 5000 } },
  { 'data.step_applied': { name: '0001_step', now: NOW + 6000 } },
  { 'intake.quarantine_drop': { lane: 'lead:lead_none' } },
  {
    'operator_token.create': {
      id: 'TOKENLOOKUP1',
      name: 'relay',
      scopes: ['intake'],
      digest: 'digest-token',
      last4: 'abcd',
      now: NOW,
    },
  },
  { 'operator_token.touch': { id: 'TOKENLOOKUP1', at: NOW + 1000, from: '10.0.0.1' } },
  // An older use arriving late changes nothing.
  { 'operator_token.touch': { id: 'TOKENLOOKUP1', at: NOW + 500, from: '10.0.0.2' } },
  { 'operator_token.revoke': { name: 'relay', now: NOW + 2000 } },
  { 'console_session.open': session('a', NOW) },
  { 'console_session.touch': { id: 'session_a', now: NOW + 60_000 } },
  // A day later: opening another deletes the expired one.
  { 'console_session.open': session('b', NOW + 25 * HOUR) },
  { 'console_session.open': session('c', NOW + 25 * HOUR) },
  { 'console_session.close': { id: 'session_c' } },
];

const META_KEYS = [
  'key_pepper',
  'cursor_secret',
  'api_disabled',
  'capability_disabled',
  `sandbox_team:${TEAM}`,
  'sandbox_integration:prn_one',
  `holds_data:${TEAM}`,
  'feed_epoch',
  'demo_start',
  'data_migration:0001_step',
];
const KINDS: EntityKind[] = ['organization', 'team', 'integration', 'api_key', 'console_session', 'operator_token'];

/** Runs the script; returns each command's result (or refusal) and what is stored after it. */
async function play(w: World, store: Store): Promise<{ results: unknown[]; stored: unknown }> {
  const results: unknown[] = [];
  for (const step of script()) {
    const [name, input] = Object.entries(step)[0] as [CommandName, never];
    results.push(await runCommand(store, name, input).catch((error: Error) => `refused: ${error.message}`));
  }
  const entities = await Promise.all(
    KINDS.map(async (kind) => (await w.store.findEntities(kind, {})).map((e) => [e.id, e.parent, e.state])),
  );
  const meta = await Promise.all(META_KEYS.map((k) => w.store.getMeta(k)));
  const feed = (await w.feed()).map((f) => [f.pos, f.kind, f.id, f.version, f.recordedAt]);
  return { results, stored: { entities, meta, feed } };
}

describeEachBackend('write commands', (makeStore) => {
  const worlds: World[] = [];
  afterEach(async () => {
    for (const w of worlds.splice(0)) await w.store.close();
  });
  const start = async () => {
    const w = await world(makeStore);
    worlds.push(w);
    await w.apply(newLead('lead_1'));
    return w;
  };

  it('every transaction command run through a rolled-back first attempt gives the result and state of one run', async () => {
    const once = await start();
    const twice = await start();
    const expected = await play(once, once.store);
    const retried = await play(twice, retrying(twice.store));
    expect(retried).toEqual(expected);
    expect(expected.results.filter((r) => typeof r === 'string' && r.startsWith('refused'))).toEqual([]);
    // The script covers the whole table's transaction commands.
    const scripted = new Set(script().flatMap((step) => Object.keys(step)));
    const txCommands = Object.entries(COMMANDS).flatMap(([name, command]) => ('tx' in command ? [name] : []));
    expect([...scripted].sort()).toEqual(txCommands.sort());
  });

  it('a secret is stored once: a later command with another fresh value returns the first', async () => {
    const w = await start();
    expect(await runCommand(w.store, 'secret.pepper', { fresh: 'first' })).toBe('first');
    expect(await runCommand(w.store, 'secret.pepper', { fresh: 'second' })).toBe('first');
  });

  it('a marked restore takes the candidate epoch unlike the current one', async () => {
    const w = await start();
    expect(await runCommand(w.store, 'feed.mark_restore', { tokens: ['a', 'b'] })).toEqual({
      previous: '0',
      epoch: 'a',
    });
    expect(await runCommand(w.store, 'feed.mark_restore', { tokens: ['a', 'b'] })).toEqual({
      previous: 'a',
      epoch: 'b',
    });
  });

  it('a team moved by the operator has its new organization as parent, as team.upsert sets it', async () => {
    const w = await start();
    const parentOf = async (team: string) => (await w.store.getEntity<TeamState>('team', team))?.parent;
    expect(await parentOf(OTHER_TEAM)).toBe('org_1');
    await runCommand(w.store, 'team.change', { id: OTHER_TEAM, change: { field: 'organization', value: 'org_2' } });
    expect(await parentOf(OTHER_TEAM)).toBe('org_2');
    expect((await w.store.findEntities('team', { parent: 'org_2' })).map((t) => t.id)).toContain(OTHER_TEAM);
    await runCommand(w.store, 'team.change', { id: OTHER_TEAM, change: { field: 'organization', value: null } });
    expect(await parentOf(OTHER_TEAM)).toBeNull();
    await w.apply({ type: 'team.upsert', at: T0, team: OTHER_TEAM, organization: 'org_1' });
    expect(await parentOf(OTHER_TEAM)).toBe('org_1');
    // Capture writes the team through the same writer: the parent stays the organization.
    await runCommand(w.store, 'capture.request', { teams: [OTHER_TEAM], now: NOW });
    expect(await parentOf(OTHER_TEAM)).toBe('org_1');
  });

  it('audit.append and feed.trim run on the store itself (their own transactions)', async () => {
    const w = await start();
    await runCommand(w.store, 'audit.append', {
      at: T0,
      actor: 'tester',
      action: 'integration.revoke',
      target: ['prn_x'],
      outcome: 'ok',
      details: {},
    });
    expect(await w.store.listAudit({ limit: 10 })).toMatchObject([{ actor: 'tester', action: 'integration.revoke' }]);
    expect(await runCommand(w.store, 'feed.trim', { removalsBefore: 0, supersededBefore: 0 })).toBe(0);
  });
});
