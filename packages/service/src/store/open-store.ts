import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

export const DEFAULT_DB_URL = 'sqlite:./data/crm-export.db';

/**
 * Opens the store a database URL names and applies pending migrations:
 * `sqlite:PATH` (or `sqlite::memory:`) or `postgres://...` / `postgresql://...`.
 */
export async function openStore(url: string = DEFAULT_DB_URL): Promise<Store> {
  let store: Store;
  if (url.startsWith('sqlite:')) {
    store = new SqliteStore({ path: url.slice('sqlite:'.length) || ':memory:' });
  } else if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const { PostgresStore } = await import('./postgres/postgres-store.js');
    store = new PostgresStore({ url });
  } else {
    throw new Error('Unsupported database URL: use sqlite:PATH or postgres://...');
  }
  await store.migrate();
  return store;
}
