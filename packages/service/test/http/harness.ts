import type { FastifyInstance } from 'fastify';
import type { AccessControl } from '../../src/access/access-control.js';
import { ManualClock } from '../../src/clock.js';
import { buildApp } from '../../src/http/app.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { FakeAccess } from './fake-access.js';
import { KEY_A, KEY_AB, KEY_NONE, TEAM_A, TEAM_B } from './fixtures.js';

export interface Harness {
  app: FastifyInstance;
  store: Store;
  access: FakeAccess;
  clock: ManualClock;
  close(): Promise<void>;
}

/** The three fake keys: one team, two teams, no team. */
export function fakeAccess(): FakeAccess {
  return new FakeAccess([
    { key: KEY_A, teams: [TEAM_A] },
    { key: KEY_AB, teams: [TEAM_A, TEAM_B] },
    { key: KEY_NONE, teams: [] },
  ]);
}

/** An app over `store` (a fresh SQLite one by default) and the fake access control. */
export async function harness(
  options: { store?: Store; access?: AccessControl; limits?: Partial<Limits> } = {},
): Promise<Harness> {
  const store = options.store ?? (await freshSqlite());
  const access = (options.access ?? fakeAccess()) as FakeAccess;
  const clock = new ManualClock(Date.parse('2026-01-15T09:00:00.000Z'));
  const app = buildApp({ store, access, clock, limits: { ...DEFAULT_LIMITS, ...options.limits }, logger: false });
  await app.ready();
  return {
    app,
    store,
    access,
    clock,
    close: async () => {
      await app.close();
      await store.close();
    },
  };
}

async function freshSqlite(): Promise<Store> {
  const store = new SqliteStore({ path: ':memory:' });
  await store.migrate();
  return store;
}

export const auth = (key: string) => ({ authorization: `Bearer ${key}` });
