import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { registerAdminCommands } from '../../src/cli/admin.js';
import { registerBackupCommands } from '../../src/cli/admin-backup.js';
import { confirmed } from '../../src/cli/admin-run.js';
import { registerFeedCommands } from '../../src/cli/feed-commands.js';
import { currentFeedEpoch } from '../../src/feed/feed-epoch.js';
import type { AuditEntry, Store } from '../../src/store/store.js';
import type { ApiKeyState } from '../../src/write/commands/key-state.js';
import { runCli } from '../cli/cli.js';
import { describeEachBackend } from '../support/backends.js';
import { seedOrganization, seedTeam } from './fixtures.js';

const restoreDoc = readFileSync(fileURLToPath(new URL('../../../../docs/backup-restore.md', import.meta.url)), 'utf8');

// The audit trail of `crm-export admin`: what each changing command records, refusals, the absence of
// key material, `admin audit list` and the confirmation of irreversible commands.

const dir = mkdtempSync(join(tmpdir(), 'crm-export-audit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeEachBackend('admin audit trail', (makeStore, backend) => {
  let store: Store;
  let out: string[];
  let err: string[];
  let stdinTTY: PropertyDescriptor | undefined;
  beforeEach(async () => {
    store = await makeStore();
    await seedOrganization(store, 'org_a');
    await seedTeam(store, 'team_a1', { organization: 'org_a' });
    await seedTeam(store, 'team_a2', { organization: 'org_a' });
    out = [];
    err = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out.push(String(chunk));
      return true;
    });
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      err.push(String(chunk));
      return true;
    });
    // The commands run as they do from a script: no terminal to ask.
    stdinTTY = Object.getOwnPropertyDescriptor(process.stdin, 'isTTY');
    Object.defineProperty(process.stdin, 'isTTY', { value: undefined, configurable: true });
    process.exitCode = 0;
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    if (stdinTTY) Object.defineProperty(process.stdin, 'isTTY', stdinTTY);
    else delete (process.stdin as { isTTY?: boolean }).isTTY;
    process.exitCode = 0;
    await store.close();
  });

  /** Runs `crm-export admin ...` against the test store and returns what it printed. */
  async function admin(...args: string[]): Promise<string> {
    out = [];
    const program = new Command('crm-export').exitOverride();
    const open = async () => ({ store, close: async () => {} });
    registerAdminCommands(program, open);
    registerFeedCommands(program, open);
    registerBackupCommands(program, open);
    await program.parseAsync(['admin', ...args], { from: 'user' });
    return out.join('');
  }
  const json = async (...args: string[]) => JSON.parse(await admin(...args, '--json'));
  const trail = () => store.listAudit({ limit: 10_000 });
  const brief = (e: AuditEntry) => ({ actor: e.actor, action: e.action, target: e.target, outcome: e.outcome });

  it('every kind of changing command is recorded with its actor, action, target and outcome ok', async () => {
    const me = userInfo().username;
    await json('orgs', 'create', 'Beta Ltd', '--id', 'org_b', '--plan', 'no_api', '--actor', 'alice');
    await json('orgs', 'set-plan', 'org_b', 'api_included', '--api-agreed', 'yes');
    await json('teams', 'set-state', 'team_a2', 'active');
    await json('teams', 'set-sector', 'team_a2', 'no');
    await json('teams', 'set-legal', 'team_a2', 'yes');
    await json('teams', 'set-org', 'team_a2', 'org_a');
    await json('teams', 'set-holds-data', 'team_a2', 'yes');
    const { integration } = await json('integrations', 'create', '--teams', 'team_a1', '--name', 'Warehouse');
    const id = integration.id as string;
    await json('integrations', 'roll', id, '--grace', '1h');
    await json('integrations', 'end-old-key', id, '--yes');
    await json('integrations', 'allowlist', 'add', id, '192.0.2.0/24');
    await json('integrations', 'allowlist', 'remove', id, '192.0.2.0/24');
    await json('integrations', 'allowlist', 'set', id, '--yes');
    await json('switches', 'api', 'off');
    await json('switches', 'capability', 'leads.list', 'off');
    await json('feed', 'mark-restore', '--yes');
    await json('feed', 'trim');
    await json('feed', 'capture');
    const erasures = join(dir, `erasures-${backend}.ndjson`);
    await json('erasures', 'export', '--to', erasures);
    await json('erasures', 'replay', erasures, '--yes');
    await json('integrations', 'revoke', id, '--yes', '--actor', 'bob');
    // Reads are not recorded.
    await json('integrations', 'list');
    await json('audit', 'list');

    const entries = await trail();
    expect(entries.map(brief)).toEqual([
      { actor: 'alice', action: 'organization.create', target: ['org_b'], outcome: 'ok' },
      { actor: me, action: 'organization.set_plan', target: ['org_b'], outcome: 'ok' },
      { actor: me, action: 'team.set_state', target: ['team_a2'], outcome: 'ok' },
      { actor: me, action: 'team.set_sector', target: ['team_a2'], outcome: 'ok' },
      { actor: me, action: 'team.set_legal', target: ['team_a2'], outcome: 'ok' },
      { actor: me, action: 'team.set_org', target: ['team_a2'], outcome: 'ok' },
      { actor: me, action: 'team.set_holds_data', target: ['team_a2'], outcome: 'ok' },
      { actor: me, action: 'integration.create', target: [id], outcome: 'ok' },
      { actor: me, action: 'integration.roll', target: [id], outcome: 'ok' },
      { actor: me, action: 'integration.end_old_key', target: [id], outcome: 'ok' },
      { actor: me, action: 'allowlist.add', target: [id], outcome: 'ok' },
      { actor: me, action: 'allowlist.remove', target: [id], outcome: 'ok' },
      { actor: me, action: 'allowlist.set', target: [id], outcome: 'ok' },
      { actor: me, action: 'switch.api', target: ['api'], outcome: 'ok' },
      { actor: me, action: 'switch.capability', target: ['leads.list'], outcome: 'ok' },
      { actor: me, action: 'feed.mark_restore', target: [], outcome: 'ok' },
      { actor: me, action: 'feed.trim', target: [], outcome: 'ok' },
      { actor: me, action: 'feed.capture', target: [], outcome: 'ok' },
      { actor: me, action: 'erasures.export', target: [], outcome: 'ok' },
      { actor: me, action: 'erasures.replay', target: [], outcome: 'ok' },
      { actor: 'bob', action: 'integration.revoke', target: [id], outcome: 'ok' },
    ]);
    // Details are the settings needed to re-apply a change.
    const detail = (action: string) => entries.find((e) => e.action === action)?.details;
    expect(detail('organization.set_plan')).toEqual({ plan: 'api_included', apiAgreed: 'yes' });
    expect(detail('integration.create')).toMatchObject({ name: 'Warehouse', teams: ['team_a1'], allowlist: [] });
    expect(detail('integration.roll')).toMatchObject({ grace: '1h', compromised: false });
    expect(detail('allowlist.add')).toEqual({ entries: ['192.0.2.0/24'], allowlist: ['192.0.2.0/24'] });
    expect(detail('switch.capability')).toEqual({ state: 'off' });
    expect(detail('feed.mark_restore')).toMatchObject({ epoch: await currentFeedEpoch(store) });
    for (const e of entries) expect(Date.parse(e.at)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('a refused command is recorded with its error code', async () => {
    await json('teams', 'set-state', 'team_a1', 'api_paused');
    expect((await json('integrations', 'create', '--teams', 'team_a1', '--name', 'x')).error.code).toBe(
      'team_state_restricted',
    );
    expect((await json('integrations', 'revoke', 'int_missing', '--yes')).error.code).toBe('not_found');
    expect((await json('teams', 'set-sector', 'team_a1', 'maybe')).error.code).toBe('invalid_argument');
    expect((await trail()).slice(1).map(brief)).toEqual([
      { actor: userInfo().username, action: 'integration.create', target: [], outcome: 'team_state_restricted' },
      { actor: userInfo().username, action: 'integration.revoke', target: ['int_missing'], outcome: 'not_found' },
      { actor: userInfo().username, action: 'team.set_sector', target: ['team_a1'], outcome: 'invalid_argument' },
    ]);
  });

  it('backup is recorded: ok on SQLite, refused with its code on PostgreSQL', async () => {
    const to = join(dir, `backup-${backend}-${Date.now()}.db`);
    const result = await json('backup', '--db', 'sqlite:ignored-by-the-test-store.db', '--to', to);
    const [entry] = await trail();
    expect(entry).toMatchObject({ action: 'backup.create', details: { to, force: false } });
    if (backend === 'sqlite') {
      expect(result.backup).toBe(to);
      expect(entry?.outcome).toBe('ok');
    } else {
      expect(result.error.code).toBe('invalid_argument');
      expect(entry?.outcome).toBe('invalid_argument');
    }
  });

  it('an --actor that is empty or spans lines is refused before anything runs or is recorded', async () => {
    for (const actor of ['', ' x', 'a\nb']) {
      process.exitCode = 0;
      expect((await json('switches', 'api', 'off', '--actor', actor)).error.code).toBe('invalid_argument');
      expect(process.exitCode).toBe(1);
    }
    expect(await store.getMeta('api_disabled')).toBeUndefined();
    expect(await trail()).toEqual([]);
  });

  it('no key, key secret or key digest ever reaches the audit table', async () => {
    const keys: string[] = [];
    const created = await json('integrations', 'create', '--teams', 'team_a1', '--name', 'K');
    keys.push(created.key);
    const id = created.integration.id as string;
    keys.push((await json('integrations', 'roll', id, '--grace', '1h')).key);
    keys.push((await json('integrations', 'roll', id, '--compromised', '--yes')).key);
    const digests = (await store.findEntities<ApiKeyState>('api_key', { parent: id })).map((k) => k.state.digest);
    expect(digests).toHaveLength(3);
    const table = JSON.stringify(await trail());
    expect(table).toContain('integration.roll');
    for (const key of keys) {
      expect(table).not.toContain(key);
      // The secret part alone (the characters after the prefix and the 12-character lookup id).
      expect(table).not.toContain(key.slice('crmx_live_'.length + 12));
    }
    for (const digest of digests) expect(table).not.toContain(digest);
    expect(table).not.toMatch(/crmx_live_/);
  });

  it('audit list filters by time, action (or prefix), actor, target and limit; text has a header row', async () => {
    const at = (t: string, action: string, actor: string, target: string[], outcome = 'ok') =>
      store.appendAudit({ at: t, actor, action, target, outcome, details: {} });
    await at('2026-03-01T10:00:00.000Z', 'integration.create', 'alice', ['int_1']);
    await at('2026-03-02T10:00:00.000Z', 'allowlist.set', 'bob', ['int_1']);
    await at('2026-03-03T10:00:00.000Z', 'integration.revoke', 'alice', ['int_2'], 'not_found');
    await at('2026-03-04T10:00:00.000Z', 'team.set_org', 'carol', ['team_a1']);
    const actions = async (...args: string[]) =>
      ((await json('audit', 'list', ...args)) as AuditEntry[]).map((e) => e.action);

    expect(await actions()).toEqual(['integration.create', 'allowlist.set', 'integration.revoke', 'team.set_org']);
    expect(await actions('--since', '2026-03-02T10:00:00Z', '--until', '2026-03-04')).toEqual([
      'allowlist.set',
      'integration.revoke',
    ]);
    expect(await actions('--since', '2026-03-02T12:00:00+02:00')).toEqual([
      'allowlist.set',
      'integration.revoke',
      'team.set_org',
    ]);
    expect(await actions('--action', 'integration')).toEqual(['integration.create', 'integration.revoke']);
    expect(await actions('--action', 'integration.revoke')).toEqual(['integration.revoke']);
    expect(await actions('--action', 'integ')).toEqual([]);
    expect(await actions('--actor', 'alice')).toEqual(['integration.create', 'integration.revoke']);
    expect(await actions('--target', 'int_1')).toEqual(['integration.create', 'allowlist.set']);
    expect(await actions('--target', 'int')).toEqual([]);
    // The newest entries, printed oldest first.
    expect(await actions('--limit', '2')).toEqual(['integration.revoke', 'team.set_org']);
    expect((await json('audit', 'list', '--action', 'integration.revoke'))[0]).toEqual({
      at: '2026-03-03T10:00:00.000Z',
      actor: 'alice',
      action: 'integration.revoke',
      target: ['int_2'],
      outcome: 'not_found',
      details: {},
    });

    const text = (await admin('audit', 'list', '--actor', 'alice')).trimEnd().split('\n');
    expect(text[0]?.split(/\s{2,}/)).toEqual(['TIME', 'ACTOR', 'ACTION', 'TARGET', 'OUTCOME', 'DETAILS']);
    expect(text[2]?.split(/\s{2,}/)).toEqual([
      '2026-03-03T10:00:00.000Z',
      'alice',
      'integration.revoke',
      'int_2',
      'not_found',
    ]);
    expect(text).toHaveLength(3);
    expect(await admin('audit', 'list', '--actor', 'nobody')).toBe('(none)\n');
  });

  it('audit list refuses a time that is not ISO 8601 and a limit out of range', async () => {
    for (const args of [
      ['--since', 'yesterday'],
      ['--until', '2026-13-01'],
      ['--since', '03/01/2026'],
      ['--limit', '0'],
      ['--limit', '10001'],
      ['--limit', '2.5'],
    ]) {
      process.exitCode = 0;
      expect((await json('audit', 'list', ...args)).error.code, args.join(' ')).toBe('invalid_argument');
      expect(process.exitCode).toBe(1);
    }
  });

  it('audit list never cuts a list silently: more matches than --limit say so and exit 1; --all prints every one', async () => {
    for (let i = 1; i <= 5; i++)
      await store.appendAudit({
        at: `2026-03-0${i}T10:00:00.000Z`,
        actor: 'alice',
        action: 'team.set_state',
        target: [`team_${i}`],
        outcome: 'ok',
        details: {},
      });
    const targets = (list: AuditEntry[]) => list.map((e) => e.target[0]);
    const listed = async (...args: string[]) => {
      process.exitCode = 0;
      err = [];
      const list = targets(await json('audit', 'list', ...args));
      return { list, exitCode: process.exitCode, note: err.join('') };
    };

    const cut = await listed('--limit', '3');
    expect(cut.list).toEqual(['team_3', 'team_4', 'team_5']);
    expect(cut.exitCode).toBe(1);
    expect(cut.note).toContain('more entries match than the 3 printed');
    // Exactly as many as asked: nothing was left out, nothing to say.
    expect(await listed('--limit', '5')).toEqual({ list: targets(await trail()), exitCode: 0, note: '' });
    expect(await listed('--all')).toEqual({ list: targets(await trail()), exitCode: 0, note: '' });
    expect((await listed('--all', '--since', '2026-03-04')).list).toEqual(['team_4', 'team_5']);

    // The text table is cut the same way, and says so.
    process.exitCode = 0;
    err = [];
    expect((await admin('audit', 'list', '--limit', '2')).trimEnd().split('\n')).toHaveLength(3);
    expect(process.exitCode).toBe(1);
    expect(err.join('')).toContain('pass --all');
    process.exitCode = 0;
    expect((await json('audit', 'list', '--all', '--limit', '3')).error.code).toBe('invalid_argument');
    expect(process.exitCode).toBe(1);
  });

  it("the restore procedure's audit export (docs/backup-restore.md) holds every entry since the backup, however many", async () => {
    // The command as the procedure writes it, output redirection left out.
    const line = /`crm-export (admin audit list [^`>]*?)\s*>[^`]*`/.exec(restoreDoc)?.[1];
    expect(line).toBeDefined();
    const args = (line as string).split(/\s+/).slice(1);
    const since = args[args.indexOf('--since') + 1] as string;
    // More entries since the backup than the command lists by default, or than its --limit if it has one.
    const limit = args.includes('--limit') ? Number(args[args.indexOf('--limit') + 1]) : 100;
    const t = Date.parse(since);
    const at = (s: number) => new Date(t + s * 1000).toISOString();
    await store.appendAudit({
      at: at(-60),
      actor: 'ops',
      action: 'integration.revoke',
      target: ['int_old'],
      outcome: 'ok',
      details: {},
    });
    // The first change after the backup revokes a leaked key; a busy trail follows.
    await store.appendAudit({
      at: at(1),
      actor: 'ops',
      action: 'integration.revoke',
      target: ['int_leaked'],
      outcome: 'ok',
      details: {},
    });
    for (let i = 0; i < limit; i++)
      await store.appendAudit({
        at: at(2 + i),
        actor: 'ops',
        action: 'switch.api',
        target: ['api'],
        outcome: 'ok',
        details: {},
      });

    process.exitCode = 0;
    const saved = JSON.parse(await admin(...args)) as AuditEntry[];
    expect(process.exitCode).toBe(0);
    expect(saved).toHaveLength(limit + 1);
    expect(saved[0]).toMatchObject({ action: 'integration.revoke', target: ['int_leaked'] });
    expect(saved.some((e) => e.target.includes('int_old'))).toBe(false);
  });

  it('irreversible commands without --yes and without a terminal are refused before anything changes', async () => {
    const created = await json(
      'integrations',
      'create',
      '--teams',
      'team_a1',
      '--name',
      'Y',
      '--allowlist',
      '192.0.2.1',
    );
    const id = created.integration.id as string;
    await json('integrations', 'roll', id, '--grace', '1h');
    const epoch = await currentFeedEpoch(store);
    const before = await trail();
    for (const args of [
      ['integrations', 'revoke', id],
      ['integrations', 'roll', id, '--compromised'],
      ['integrations', 'end-old-key', id],
      ['integrations', 'allowlist', 'set', id],
      ['feed', 'mark-restore'],
      ['erasures', 'replay', join(dir, 'none.ndjson')],
    ]) {
      process.exitCode = 0;
      err = [];
      expect((await json(...args)).error.code, args.join(' ')).toBe('confirmation_required');
      expect(process.exitCode).toBe(1);
      expect(err.join('')).toMatch(/pass --yes/);
    }
    const [listed] = await json('integrations', 'list');
    expect(listed).toMatchObject({ status: 'active', allowlist: ['192.0.2.1'] });
    expect(listed.keys.map((k: { status: string }) => k.status)).toEqual(['grace', 'active']);
    expect(await currentFeedEpoch(store)).toBe(epoch);
    expect(await trail()).toEqual(before);
    // A reversible change needs no confirmation: a non-empty allowlist.
    process.exitCode = 0;
    await json('integrations', 'allowlist', 'set', id, '198.51.100.0/24');
    expect(process.exitCode).toBe(0);
  });

  it('at a terminal an irreversible command runs only when the operator types yes', async () => {
    const ask = async (answer: string) => {
      const input = Object.assign(new PassThrough(), { isTTY: true });
      let ran = false;
      const asked = confirmed(
        {},
        'this cannot be undone',
        async () => {
          ran = true;
        },
        input,
      );
      input.end(`${answer}\n`);
      await asked;
      return ran;
    };
    expect(await ask('yes')).toBe(true);
    expect(await ask(' YES ')).toBe(true);
    process.exitCode = 0;
    expect(await ask('y')).toBe(false);
    expect(process.exitCode).toBe(1);
    expect(err.join('')).toContain('not confirmed, nothing changed');
    expect(await ask('')).toBe(false);
  });
});

describe('admin audit trail through the installed command', { timeout: 60_000 }, () => {
  it('mark-restore with standard input a pipe and no --yes exits 1 and changes nothing; with --yes it runs and is listed', async () => {
    const db = `sqlite:${join(dir, 'process.db')}`;
    expect((await runCli(['migrate', '--db', db])).code).toBe(0); // admin commands never create a database
    const refused = await runCli(['admin', 'feed', 'mark-restore', '--db', db]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/pass --yes to confirm/);
    const marked = await runCli(['admin', 'feed', 'mark-restore', '--db', db, '--yes', '--actor', 'ops-1', '--json']);
    expect(marked.code, marked.stderr).toBe(0);
    const listed = await runCli(['admin', 'audit', 'list', '--db', db, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ actor: 'ops-1', action: 'feed.mark_restore', outcome: 'ok' }),
    ]);
  });
});
