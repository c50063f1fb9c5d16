// `mirror export --out` never writes over the SQLite mirror it reads (nor its -wal, -shm, -journal), by any
// path, link or spelling; and `mirror status` shows what the service sent with control characters escaped.
import { existsSync, linkSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { registerSyncCommands } from '../src/cli.js';
import { type OpenMirror, openMirror } from '../src/sync/open-mirror.js';

let dir: string;
let path: string;
let mirror: OpenMirror;
let out: string[];
let err: string[];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'crm-mirror-export-'));
  path = join(dir, 'mirror.db');
  // Held open as a running sync holds it: WAL mode, its -wal and -shm beside it.
  mirror = await openMirror(`sqlite:${path}`);
  await sql`insert into mirror_teams (team, last_error) values (${'team_\u001b]0;owned\u0007\u009b2J'}, ${'bad\u001b[2J\nnews'})`.execute(
    mirror.db,
  );
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
  await mirror.close();
  rmSync(dir, { recursive: true, force: true });
});

async function run(...args: string[]): Promise<void> {
  out = [];
  err = [];
  const program = new Command('crm-export-sync').exitOverride();
  registerSyncCommands(program);
  await program.parseAsync(args, { from: 'user' });
}

const identity = (p: string) => `${statSync(p).dev}:${statSync(p).ino}`;

describe('mirror export --out', () => {
  it('refuses the mirror and its -wal, -shm, -journal by any path, link or spelling, and leaves it intact', async () => {
    const before = identity(path);
    symlinkSync(path, join(dir, 'symlink.db'));
    linkSync(path, join(dir, 'hardlink.db'));
    symlinkSync(dir, join(dir, 'folder-link'));
    for (const target of [
      path,
      join(dir, '.', 'x', '..', 'mirror.db'),
      join(dir, 'symlink.db'),
      join(dir, 'hardlink.db'),
      join(dir, 'folder-link', 'mirror.db'),
      `${path}-wal`,
      `${path}-shm`,
      `${path}-journal`,
    ]) {
      for (const into of [`sqlite:${path}`, path, `sqlite:${join(dir, 'symlink.db')}`]) {
        process.exitCode = 0;
        await run('mirror', 'export', '--into', into, '--out', target);
        expect(process.exitCode, `${target} (${into})`).toBe(2);
        expect(err.join('')).toContain('write it elsewhere');
        expect(identity(path)).toBe(before);
        expect(statSync(path).size).toBeGreaterThan(0);
        expect(existsSync(`${path}-journal`)).toBe(false);
        const teams = await sql<{ n: number }>`select count(*) as n from mirror_teams`.execute(mirror.db);
        expect(teams.rows[0]?.n).toBe(1);
      }
    }
  });

  it('still writes a file beside the mirror, even one named after it', async () => {
    for (const target of [join(dir, 'copy.ndjson'), `${path}.ndjson`]) {
      process.exitCode = 0;
      await run('mirror', 'export', '--into', `sqlite:${path}`, '--out', target);
      expect(process.exitCode, target).toBe(0);
      expect(readFileSync(target, 'utf8')).toBe('');
    }
  });
});

describe('mirror status', () => {
  it('prints team ids and the last error with control characters escaped', async () => {
    await run('mirror', 'status', '--into', `sqlite:${path}`);
    const text = out.join('');
    expect(text).toContain('team_\\x1b]0;owned\\x07\\x9b2J: no cursor yet');
    expect(text).toContain('last error: bad\\x1b[2J\\x0anews\n');
    expect(text).not.toMatch(/[^\P{Cc}\n]/u);
  });
});
