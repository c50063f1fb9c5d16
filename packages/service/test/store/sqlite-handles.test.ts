import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// better-sqlite3 12 aborts Node 24 (`Assertion failed: (env) != nullptr`) when one of its native objects
// (Database, Statement, Backup) is garbage-collected. The SQLite store keeps every handle it makes
// referenced, also after close. A child process with `--expose-gc` runs stores through migrations, writes,
// reads and a backup, closes them and forces collection: on Node 24 a dropped handle kills it.

const dir = mkdtempSync(join(tmpdir(), 'crm-export-sqlite-gc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the SQLite store and garbage collection', () => {
  it('stores opened, written, read, backed up and closed leave no handle to be collected: the process survives forced gc', () => {
    const storeModule = fileURLToPath(new URL('../../src/store/sqlite/sqlite-store.ts', import.meta.url));
    const script = `
      const { SqliteStore } = await import(${JSON.stringify(storeModule)});
      for (let i = 0; i < 20; i++) {
        const store = new SqliteStore({ path: ${JSON.stringify(join(dir, 'store'))} + i + '.db' });
        await store.migrate();
        await store.write((tx) => tx.setMeta('probe', String(i)));
        if ((await store.getMeta('probe')) !== String(i)) throw new Error('meta not read back');
        await store.backup(${JSON.stringify(join(dir, 'copy'))} + i + '.db');
        await store.close();
      }
      globalThis.gc();
      await new Promise((resolve) => setTimeout(resolve, 100));
      globalThis.gc();
      process.stdout.write('survived');
    `;
    const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).not.toContain('Assertion failed');
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('survived');
  });
});
