import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Command } from 'commander';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerBackupCommands } from '../../src/cli/admin-backup.js';
import { startDir } from '../../src/cli/options.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { captureOutput, releaseOutput } from '../support/captured-output.js';
import { openSqliteFile } from '../support/sqlite-file.js';

// Every admin command that writes a file (`admin backup --to`, `admin erasures export --to`) refuses a
// target that is the live SQLite database or a file SQLite keeps beside it, however the path reaches it,
// and leaves the database as it was: the service keeps writing to the same file, and nothing is lost.

const root = mkdtempSync(join(tmpdir(), 'crm-export-output-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The commands that write a file, each with the arguments that would overwrite one (`--force` included). */
const WRITERS: Record<string, (to: string) => string[]> = {
  'admin backup --force': (to) => ['backup', '--to', to, '--force'],
  'admin erasures export': (to) => ['erasures', 'export', '--to', to],
};

describe('admin commands that write a file never write over the live database', () => {
  let dir: string;
  let live: string;
  let store: SqliteStore;
  let out: string[];
  let written = 0;
  beforeEach(async () => {
    dir = mkdtempSync(join(root, 'db-'));
    live = join(dir, 'live.db');
    // Open as the service holds it: WAL mode, its -wal and -shm beside it.
    store = new SqliteStore({ path: live });
    await store.migrate();
    written = 0;
    out = [];
    captureOutput((chunk) => out.push(chunk));
  });
  afterEach(async () => {
    releaseOutput();
    await store.close();
  });

  /** A write of the running service: one audit entry. */
  const serviceWrites = async () => {
    written++;
    await store.appendAudit({
      at: new Date().toISOString(),
      actor: 'service',
      action: 'switch.api',
      target: [`write_${written}`],
      outcome: 'ok',
      details: {},
    });
  };

  /** Runs `crm-export admin ...` in this process against the live store; the JSON it printed. */
  async function admin(db: string, args: string[]): Promise<{ error?: { code: string; message: string } }> {
    out = [];
    const program = new Command('crm-export').exitOverride();
    program.command('admin');
    registerBackupCommands(program, async () => ({ store, close: async () => {} }));
    await program.parseAsync(['admin', ...args, '--db', db, '--json'], { from: 'user' });
    return JSON.parse(out.join(''));
  }

  const identity = (path: string) => `${statSync(path).dev}:${statSync(path).ino}`;

  /** The database file still is the one the service writes to: a new connection reads every write. */
  function expectIntact(before: string) {
    expect(identity(live)).toBe(before);
    expect(existsSync(`${live}-wal`)).toBe(true);
    const db = openSqliteFile(live, { readonly: true });
    try {
      expect(db.prepare('PRAGMA integrity_check').pluck().get()).toBe('ok');
      expect(db.prepare("SELECT count(*) FROM audit WHERE actor = 'service'").pluck().get()).toBe(written);
    } finally {
      db.close();
    }
  }

  for (const [command, args] of Object.entries(WRITERS)) {
    it(`${command} refuses the database and its -wal, -shm, -journal files by any path, link or spelling`, async () => {
      await serviceWrites();
      const before = identity(live);
      mkdirSync(join(dir, 'sub'));
      symlinkSync(live, join(dir, 'symlink.db'));
      linkSync(live, join(dir, 'hardlink.db'));
      symlinkSync(dir, join(dir, 'folder-link'));
      symlinkSync(live, join(dir, 'db-link.db'));
      const targets: [string, string][] = [
        ['the file itself', live],
        ['another spelling', join(dir, 'sub', '..', '.', 'live.db')],
        ['relative to where the command was started', relative(startDir(), live)],
        ['a symbolic link to it', join(dir, 'symlink.db')],
        ['a hard link to it', join(dir, 'hardlink.db')],
        ['through a linked folder', join(dir, 'folder-link', 'live.db')],
        ['its -wal', `${live}-wal`],
        ['its -shm', `${live}-shm`],
        ['its -journal (absent now)', `${live}-journal`],
        ['its -wal through a linked folder', join(dir, 'folder-link', 'live.db-wal')],
      ];
      for (const db of [`sqlite:${live}`, `sqlite:${join(dir, 'db-link.db')}`]) {
        for (const [how, to] of targets) {
          process.exitCode = 0;
          const answer = await admin(db, args(to));
          expect(answer.error?.code, `${how} (${db})`).toBe('invalid_argument');
          expect(answer.error?.message).toContain('write it elsewhere');
          expect(process.exitCode).toBe(1);
          await serviceWrites();
          expectIntact(before);
          expect(existsSync(`${live}-journal`)).toBe(false);
        }
      }
      // The links are left as they were.
      expect(identity(join(dir, 'hardlink.db'))).toBe(before);
      expect(identity(join(dir, 'symlink.db'))).toBe(before);
    });

    it(`${command} still writes a file beside the database, even one named after it`, async () => {
      await serviceWrites();
      const before = identity(live);
      for (const to of [join(dir, 'copy.db'), `${live}.bak`, `${live}-wal.bak`]) {
        process.exitCode = 0;
        const answer = await admin(`sqlite:${live}`, args(to));
        expect(answer.error, to).toBeUndefined();
        expect(process.exitCode).toBe(0);
        expect(existsSync(to)).toBe(true);
      }
      await serviceWrites();
      expectIntact(before);
    });
  }
});
