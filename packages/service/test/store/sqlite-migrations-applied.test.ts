import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { MIGRATIONS } from '../../src/store/sql/migrations.js';
import { migrateSqlite } from '../../src/store/sqlite/sqlite-migrator.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openSqliteFile } from '../support/sqlite-file.js';

// A server migrates its database on every start. When the database already records exactly this build's
// migrations there is nothing to apply, and Kysely (about 260 modules) is not loaded: start-up time, issue 30.
// Any other state goes to Kysely's migrator, as before.

const dir = mkdtempSync(join(tmpdir(), 'crm-export-migrated-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => {
  vi.doUnmock('kysely');
  vi.resetModules();
});

const names = Object.keys(MIGRATIONS.sqlite);

function applied(file: string): string[] {
  const db = openSqliteFile(file, { readonly: true });
  try {
    return db.prepare('SELECT name FROM kysely_migration ORDER BY name').pluck().all() as string[];
  } finally {
    db.close();
  }
}

describe('SQLite migrations at start', () => {
  it('a database that records every migration of this build is opened without loading Kysely', async () => {
    const file = join(dir, 'current.db');
    const first = new SqliteStore({ path: file });
    await first.migrate();
    await first.close();
    vi.resetModules();
    vi.doMock('kysely', () => {
      throw new Error('Kysely was loaded');
    });
    const fresh = await import('../../src/store/sqlite/sqlite-store.js');
    const again = new fresh.SqliteStore({ path: file });
    await again.migrate();
    expect(await again.pendingMigrations()).toEqual([]);
    await again.close();
  });

  it('a database lacking some of them gets the rest applied', async () => {
    const file = join(dir, 'older.db');
    const db = openSqliteFile(file);
    try {
      const older = Object.fromEntries(Object.entries(MIGRATIONS.sqlite).slice(0, 2));
      await migrateSqlite(db, older);
      expect(applied(file)).toEqual(names.slice(0, 2));
      await migrateSqlite(db, MIGRATIONS.sqlite);
      expect(applied(file)).toEqual([...names].sort());
    } finally {
      db.close();
    }
  });

  it('a database that records a migration this build does not know is refused, as Kysely refuses it', async () => {
    const file = join(dir, 'newer.db');
    const db = openSqliteFile(file);
    try {
      const newer = { ...MIGRATIONS.sqlite, '9999_from_a_later_release': { up: async () => undefined } };
      await migrateSqlite(db, newer);
      await expect(migrateSqlite(db, MIGRATIONS.sqlite)).rejects.toThrow(/9999_from_a_later_release/);
    } finally {
      db.close();
    }
  });
});
