// The commands as a user runs them: the package's own bin against the fake server.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SYNC_BIN } from './e2e/service-process.js';
import { type FakeServer, leadObject, startFakeServer } from './support/fake-server.js';
import { inspectDatabase } from './support/sqlite-inspect.js';

let fake: FakeServer;
let dir: string;
let into: string;
const T = 'team_a';

beforeEach(async () => {
  fake = await startFakeServer([T]);
  dir = mkdtempSync(join(tmpdir(), 'crm-sync-cli-'));
  into = `sqlite:${join(dir, 'mirror.db')}`;
  fake.put(T, 'lead', leadObject('lead_1'));
  fake.put(T, 'call', { id: 'call_1', object: 'call' });
  fake.put(T, 'call', { id: 'call_2', object: 'call' });
  fake.remove(T, 'call', 'call_2');
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

function run(args: string[], env: Record<string, string> = {}) {
  const child: ChildProcess = spawn(process.execPath, [SYNC_BIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done, stderr: () => stderr };
}
const syncArgs = (...extra: string[]) => ['sync', '--base-url', fake.url, '--into', into, ...extra];

describe('crm-export sync / mirror status', () => {
  it('sync --once with the key from CRM_EXPORT_KEY, then mirror status --json in the documented shape', async () => {
    const sync = await run(syncArgs('--once'), { CRM_EXPORT_KEY: fake.key }).done;
    expect(sync.code, sync.stderr).toBe(0);
    // not a terminal: quiet structured logs, one JSON object a line, never the key
    const lines = sync.stderr.trim().split('\n');
    expect(lines.every((l) => JSON.parse(l) && true)).toBe(true);
    expect(sync.stderr).not.toContain(fake.key);
    const status = await run(['mirror', 'status', '--into', into, '--json']).done;
    expect(status.code).toBe(0);
    const parsed = JSON.parse(status.stdout) as { teams: Record<string, unknown>[] };
    expect(parsed.teams).toHaveLength(1);
    expect(parsed.teams[0]).toMatchObject({ team: T, counts: { lead: 1, call: 1 }, tombstones: 1, last_error: null });
    expect(parsed.teams[0]?.cursor_age_seconds).toBeGreaterThanOrEqual(0);
  }, 60_000);

  it('without a key it says so and exits 2', async () => {
    const env = { CRM_EXPORT_KEY: '' };
    const res = await run(syncArgs('--once'), env).done;
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('no API key');
  }, 60_000);

  it('SIGTERM stops cleanly: exit 0, lock released, what was committed stays', async () => {
    const first = run(syncArgs('--interval', '60', '--key', fake.key));
    const deadline = Date.now() + 30_000;
    while (!fake.requests.some((r) => r.path === '/sync/changes') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 300));
    first.child.kill('SIGTERM');
    const res = await first.done;
    expect(res.code, res.stderr).toBe(0);
    const db = inspectDatabase(join(dir, 'mirror.db'));
    expect(db.prepare('select count(*) n from mirror_locks').get()).toEqual({ n: 0 });
    expect(db.prepare('select cursor from mirror_teams').get()).toEqual({ cursor: `cur_${T}_4` });
    db.close();
  }, 60_000);

  it('a second sync process for the same key and team gets a clear error', async () => {
    const first = run(syncArgs('--interval', '60', '--key', fake.key));
    const deadline = Date.now() + 30_000;
    while (!fake.requests.some((r) => r.path === '/sync/changes') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const second = await run(syncArgs('--once', '--key', fake.key)).done;
    first.child.kill('SIGTERM');
    await first.done;
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/another sync process .* is syncing team_a with this key/);
  }, 60_000);
});

describe('crm-export-sync: an unknown command or option', () => {
  it('is an error with exit code 1 and a suggestion, even with --help', async () => {
    for (const args of [
      ['relay'],
      ['relay', '--help'],
      ['synk', '--help'],
      ['sync', '--base-url', 'http://127.0.0.1:9/v1', '--bogus', '--help'],
    ]) {
      const result = await run(args).done;
      expect({ args, code: result.code }).toEqual({ args, code: 1 });
      expect(result.stderr).toMatch(/unknown (command|option)/);
    }
    expect((await run(['synk']).done).stderr).toContain('Did you mean sync?');
    const help = await run(['sync', '--help']).done;
    expect({ code: help.code, usage: help.stdout.includes('Usage: crm-export-sync sync') }).toEqual({
      code: 0,
      usage: true,
    });
  });
});
