import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { registerAdminCommands } from '../../src/cli/admin.js';
import { registerIngestCommand } from '../../src/cli/ingest-command.js';
import { jsonText, printable, terminalText } from '../../src/cli/terminal-text.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { runCommand } from '../../src/write/commands/commands.js';
import { seedOrganization, seedTeam } from '../access/fixtures.js';
import { describeEachBackend } from '../support/backends.js';
import { startCli } from './cli.js';

// Every human-readable output shows the control characters of CRM data and input escaped, so a name cannot
// clear the operator's screen, set the window title or reorder what the terminal shows; JSON output stays
// JSON that parses to the very same values, with no such character written raw either.

/** Sets the window title, clears the screen, a C1 CSI, a right-to-left override, a line break. */
const HOSTILE = 'Acme\u001b]0;owned\u0007\u001b[2J\u009b31m\u202eevil\nfake row\u007f';
const SHOWN = 'Acme\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\u202eevil\\x0afake row\\x7f';
/** Any control character a terminal acts on, the line feeds that end lines aside. */
const RAW = /[^\P{Cc}\n]|[\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

const dir = mkdtempSync(join(tmpdir(), 'crm-export-terminal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('terminal text', () => {
  it('escapes C0, DEL, C1 and bidirectional controls; JSON parses back to the same value with none written raw', () => {
    expect(printable(HOSTILE)).toBe(SHOWN);
    expect(terminalText(`a: ${HOSTILE}\nb\n`)).toBe(`a: ${SHOWN.replace('\\x0a', '\n')}\nb\n`);
    for (const space of [undefined, 2]) {
      const value = { name: HOSTILE, list: [HOSTILE], [HOSTILE]: 1 };
      const text = jsonText(value, space);
      expect(JSON.parse(text)).toEqual(value);
      expect(text).not.toMatch(RAW);
    }
  });
});

describeEachBackend('terminal output of the commands', (makeStore) => {
  let store: Store;
  let out: string[];
  let err: string[];
  beforeEach(async () => {
    store = await makeStore();
    await seedOrganization(store, 'org_a');
    await seedTeam(store, 'team_a1', { organization: 'org_a' });
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
    process.exitCode = 0;
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    process.exitCode = 0;
    await store.close();
  });

  async function admin(...args: string[]): Promise<{ stdout: string; stderr: string }> {
    out = [];
    err = [];
    const program = new Command('crm-export').exitOverride();
    registerAdminCommands(program, async () => ({ store, close: async () => {} }));
    await program.parseAsync(['admin', ...args], { from: 'user' });
    return { stdout: out.join(''), stderr: err.join('') };
  }

  it('admin lists, the audit trail and refusals print an organization name with control characters escaped', async () => {
    const created = JSON.parse((await admin('orgs', 'create', HOSTILE, '--id', 'org_evil', '--json')).stdout);
    expect(created.name).toBe(HOSTILE);
    await admin('teams', 'set-org', 'team_a1', 'org_evil');

    for (const args of [
      ['orgs', 'list'],
      ['teams', 'list'],
      ['audit', 'list'],
    ]) {
      const { stdout } = await admin(...args);
      expect(stdout, args.join(' ')).not.toMatch(RAW);
      // The audit trail shows the name inside its details' JSON, C0 controls as JSON escapes.
      if (args[0] !== 'teams') expect(stdout).toContain(args[0] === 'audit' ? '\\x9b31m\\u202eevil' : SHOWN);
    }
    // One row per organization: the line break in the name does not start a row of its own.
    expect((await admin('orgs', 'list')).stdout.trimEnd().split('\n')).toHaveLength(3);

    // JSON is the same data, parsed back exactly, with nothing raw in the text.
    const listed = await admin('orgs', 'list', '--json');
    expect(listed.stdout).not.toMatch(RAW);
    expect(JSON.parse(listed.stdout).map((o: { name: string }) => o.name)).toContain(HOSTILE);

    // A refusal quoting what was typed.
    const refused = await admin('teams', 'set-org', 'team_a1', `org_${HOSTILE}`, '--json');
    expect(process.exitCode).toBe(1);
    expect(refused.stderr).not.toMatch(RAW);
    expect(refused.stdout).not.toMatch(RAW);
    expect(JSON.parse(refused.stdout).error.code).toBeDefined();
  });

  it('the ingest report quotes a hostile field name and file name escaped', async () => {
    const file = join(dir, `events\u001b[2J.ndjson`);
    const event = { type: 'lead.created', at: '2026-01-01T00:00:00Z', team: 'team_1', lead: 'lead_1', status: 'new' };
    writeFileSync(file, `${JSON.stringify({ ...event, [HOSTILE]: 1 })}\n`);
    const program = new Command('crm-export').exitOverride();
    registerIngestCommand(program);
    await program.parseAsync(['ingest', file, '--db', `sqlite:${join(dir, 'ingest.db')}`], { from: 'user' });
    expect(process.exitCode).toBe(1);
    const stderr = err.join('');
    expect(stderr).toContain('events\\x1b[2J.ndjson');
    expect(stderr).toContain(SHOWN);
    expect(stderr).not.toMatch(RAW);
  });
});

describe('crm-export start', { timeout: 120_000 }, () => {
  it('prints the example teams of its stored record with control characters escaped', async () => {
    const path = join(dir, 'start.db');
    const store = new SqliteStore({ path });
    await store.migrate();
    const record = {
      teams: [`team_${HOSTILE}`],
      integration: 'int_1',
      last4: 'abcd',
      created_at: '2026-01-01T00:00:00Z',
    };
    await runCommand(store, 'start.record', { record });
    await store.close();
    const server = await startCli(['start', '--db', `sqlite:${path}`, '--port', '0', '--ops-port', '0']);
    try {
      expect(server.stdout()).toContain(`Example teams: team_${SHOWN}`);
      expect(server.stdout()).not.toMatch(RAW);
    } finally {
      await server.stop();
    }
  });
});
