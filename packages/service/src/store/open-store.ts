import { DatabaseMissingError } from './database-missing-error.js';
import { MIGRATIONS } from './sql/migrations.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

/**
 * Opens the store a database URL names: `sqlite:PATH` (or `sqlite::memory:`) or `postgres://...` /
 * `postgresql://...`. With `create` a missing database is created and pending migrations are applied;
 * without it a SQLite file that does not exist, or a database with migrations not applied, is refused
 * with a `DatabaseMissingError` (nothing is created). `readerMmapMib`: see `SqliteStoreOptions`.
 */
export async function openStore(
  url: string,
  { create = true, readerMmapMib }: { create?: boolean; readerMmapMib?: number } = {},
): Promise<Store> {
  let store: Store;
  let where: string;
  if (url.startsWith('sqlite:')) {
    const file = path(url) as string;
    // A throw-away database is always new: it is created whatever was asked.
    store = new SqliteStore({
      path: file,
      mustExist: !create && file !== ':memory:',
      ...(readerMmapMib === undefined ? {} : { readerMmapMib }),
    });
    where = file;
  } else if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const { PostgresStore } = await import('./postgres/postgres-store.js');
    const pg = new PostgresStore({ url });
    store = pg;
    where = `PostgreSQL schema ${pg.schema}`;
  } else {
    throw new Error('Unsupported database URL: use sqlite:PATH or postgres://...');
  }
  await prepareStore(store, { where, create: create || path(url) === ':memory:' });
  return store;
}

/**
 * Applies pending migrations (`create`), or refuses a database lacking any with a `DatabaseMissingError`
 * naming `where` (the file or schema, for the message). Closes the store when it throws.
 */
export async function prepareStore(store: Store, { where, create }: { where: string; create: boolean }): Promise<void> {
  try {
    if (create) {
      await store.migrate();
      return;
    }
    const pending = await store.pendingMigrations();
    if (pending.length === 0) return;
    const all = Object.keys(MIGRATIONS[store.backend]);
    const state =
      pending.length === all.length
        ? 'is not a crm-export database (no migrations applied)'
        : `lacks migrations of this release (${pending.join(', ')})`;
    throw new DatabaseMissingError(`${where} ${state}`);
  } catch (error) {
    await store.close();
    throw error;
  }
}

/** The SQLite path of a `sqlite:` URL (empty: a throw-away database). */
const path = (url: string): string | undefined =>
  url.startsWith('sqlite:') ? url.slice('sqlite:'.length) || ':memory:' : undefined;
