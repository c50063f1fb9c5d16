import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openSqliteFile } from '../support/sqlite-file.js';

// A new SQLite file gets 8 KiB pages (docs/performance.md, "Disk"); a file created before keeps its own
// page size and is served as before.

const dir = mkdtempSync(join(tmpdir(), 'crm-export-page-size-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function pageSize(file: string): number {
  const db = openSqliteFile(file, { readonly: true });
  try {
    return db.pragma('page_size', { simple: true }) as number;
  } finally {
    db.close();
  }
}

describe('SQLite page size', () => {
  it('a new file has 8 KiB pages', async () => {
    const file = join(dir, 'new.db');
    const store = new SqliteStore({ path: file });
    await store.migrate();
    await store.close();
    expect(pageSize(file)).toBe(8192);
  });

  it('a file made with 4 KiB pages keeps them, and is migrated and read as before', async () => {
    const file = join(dir, 'older.db');
    const older = openSqliteFile(file);
    older.exec('PRAGMA page_size = 4096; PRAGMA journal_mode = WAL');
    older.close();
    const store = new SqliteStore({ path: file });
    await store.migrate();
    expect(await store.pendingMigrations()).toEqual([]);
    expect(await store.listPage({ team: 'team_A', kind: 'lead', after: 0, limit: 10 })).toMatchObject({ count: 0 });
    await store.close();
    expect(pageSize(file)).toBe(4096);
  });
});
