import { randomBytes } from 'node:crypto';
import type { LogConfig } from 'kysely';
import pg from 'pg';
import { CrmExportClient } from '../../src/client/crm-export-client.js';
import { MirrorStore } from '../../src/sync/mirror-store.js';
import { type OpenMirror, openMirror } from '../../src/sync/open-mirror.js';
import { SyncEngine } from '../../src/sync/sync-engine.js';
import type { SyncEngineOptions } from '../../src/sync/sync-engine-options.js';
import type { FakeServer } from './fake-server.js';

export interface Harness {
  mirror: OpenMirror;
  store: MirrorStore;
  engine(extra?: Partial<SyncEngineOptions>): SyncEngine;
  rows(team?: string): Promise<{ team: string; kind: string; id: string; version: number; json: string }[]>;
  tombstones(team?: string): Promise<{ kind: string; id: string; version: number; reason: string }[]>;
  cursor(team: string): Promise<string | null | undefined>;
}

/** Mirror backends the suites run on: SQLite always, PostgreSQL when `PG_URL` is set. */
export const MIRROR_BACKENDS = ['sqlite', ...(process.env.PG_URL ? ['postgres'] : [])] as const;
export type MirrorBackend = (typeof MIRROR_BACKENDS)[number];

/**
 * A fresh, empty mirror: SQLite in memory, or a PostgreSQL schema of its own dropped on close (its
 * connections' application_name is the schema's name).
 */
async function freshMirror(backend: MirrorBackend, log?: LogConfig): Promise<OpenMirror> {
  if (backend === 'sqlite') return openMirror('sqlite::memory:', { log });
  const base = process.env.PG_URL as string;
  const schema = `mirror_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  // Its connections carry the schema's name, so a test can terminate its own backends and no others.
  url.searchParams.set('application_name', schema);
  const mirror = await openMirror(url.toString(), { log });
  return {
    ...mirror,
    close: async () => {
      await mirror.close();
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`drop schema ${schema} cascade`);
      await c.end();
    },
  };
}

/** A fresh mirror and engines pointed at the fake server. */
export async function mirrorHarness(
  fake: FakeServer,
  backend: MirrorBackend = 'sqlite',
  log?: LogConfig,
): Promise<Harness> {
  const mirror = await freshMirror(backend, log);
  const store = new MirrorStore(mirror.db);
  const client = new CrmExportClient({
    baseUrl: fake.url,
    key: fake.key,
    retry: { baseDelayMs: 1, maxDelayMs: 5, maxRetryAfterSeconds: 0 },
  });
  return {
    mirror,
    store,
    engine: (extra = {}) =>
      new SyncEngine({ client, store, key: fake.key, once: true, intervalMs: 50, captureRetryMs: 50, ...extra }),
    rows: async (team) => {
      let q = mirror.db.selectFrom('mirror_records').select(['team', 'kind', 'id', 'version', 'json']);
      if (team) q = q.where('team', '=', team);
      return (await q.orderBy('kind').orderBy('id').execute()).map((r) => ({ ...r, version: Number(r.version) }));
    },
    tombstones: async (team) => {
      let q = mirror.db.selectFrom('mirror_tombstones').select(['kind', 'id', 'version', 'reason']);
      if (team) q = q.where('team', '=', team);
      return (await q.orderBy('kind').orderBy('id').execute()).map((r) => ({ ...r, version: Number(r.version) }));
    },
    cursor: async (team) =>
      (await mirror.db.selectFrom('mirror_teams').select('cursor').where('team', '=', team).executeTakeFirst())?.cursor,
  };
}
