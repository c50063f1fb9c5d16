import { describe } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';

// One suite, every backend: SQLite always; PostgreSQL when PG_URL is set (CI sets it and fails if it
// is unreachable). BACKENDS=sqlite,postgres narrows the set. Each store a test makes is its own
// database (SQLite temp file) or schema (PostgreSQL), so runs never see each other's data.

export type MakeStore = () => Promise<Store>;

export const BACKENDS = (process.env.BACKENDS ?? 'sqlite,postgres').split(',').map((b) => b.trim());

const makers: Record<string, MakeStore | string> = {
  sqlite: async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    return store;
  },
  postgres: process.env.PG_URL
    ? async () => {
        const { makeTestPostgresStore } = await import('./postgres.js');
        return makeTestPostgresStore(process.env.PG_URL as string);
      }
    : 'PostgreSQL is not enabled: set PG_URL (for example postgres://postgres@127.0.0.1:5432/test)',
};

/** Runs `suite` once per enabled backend, each under a `[backend]` describe block. */
export function describeEachBackend(name: string, suite: (makeStore: MakeStore, backend: string) => void): void {
  for (const backend of BACKENDS) {
    const maker = makers[backend];
    if (typeof maker === 'function') {
      describe(`${name} [${backend}]`, () => suite(maker, backend));
    } else {
      describe.skip(`${name} [${backend}] (skipped: ${maker ?? 'unknown backend'})`, () => {});
    }
  }
}
