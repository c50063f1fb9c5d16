import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runDemo } from '../../src/demo/run-demo.js';
import type { RecordKind } from '../../src/schemas/enums.js';
import { SchemaPostgresDialect } from '../../src/store/postgres/postgres-migrator.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SQLITE } from '../../src/store/sql/dialect.js';
import { MIGRATIONS } from '../../src/store/sql/migrations.js';
import { statementsFor } from '../../src/store/sql/statements.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ListFilter, Store } from '../../src/store/store.js';
import { BACKENDS } from '../support/backends.js';
import { adminQuery, uniqueSchema } from '../support/postgres.js';
import { openSqliteFile } from '../support/sqlite-file.js';

// The lead, board and stage indexes hold no team (migration 0009): a list filtered by one of them reads
// the same pages as before, still only the asked team's rows, and each page is a lookup in its index.

const BEFORE = '0008_request_log';
const INDEXES = ['lead', 'board', 'stage'] as const;

interface Opened {
  store: Store;
  /** Each filter index's definition, by column. */
  definitions(): Promise<Record<string, string>>;
  close(): Promise<void>;
}

async function migrateTo(db: Kysely<unknown>, backend: 'sqlite' | 'postgres', schema?: string): Promise<void> {
  const provider = { getMigrations: async () => MIGRATIONS[backend] };
  const migrator = new Migrator({ db, provider, ...(schema ? { migrationTableSchema: schema } : {}) });
  const { error } = await migrator.migrateTo(BEFORE);
  if (error) throw error;
}

const openers: Record<string, (() => Promise<Opened>) | undefined> = {
  sqlite: async () => {
    const path = join(tmpdir(), `filter-indexes-${process.pid}-${Math.random().toString(36).slice(2)}.db`);
    const file = openSqliteFile(path);
    await migrateTo(new Kysely<unknown>({ dialect: new SqliteDialect({ database: file }) }), 'sqlite');
    const store = new SqliteStore({ path });
    return {
      store,
      definitions: async () =>
        Object.fromEntries(
          INDEXES.map((c) => [
            c,
            (file.prepare('SELECT sql FROM sqlite_master WHERE name = ?').get(`records_${c}`) as { sql: string }).sql,
          ]),
        ),
      close: async () => {
        await store.close();
        file.close();
        for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
      },
    };
  },
  postgres: process.env.PG_URL
    ? async () => {
        const url = process.env.PG_URL as string;
        const schema = uniqueSchema();
        await adminQuery(url, `CREATE SCHEMA ${schema}`);
        const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
        const db = new Kysely<unknown>({ dialect: new SchemaPostgresDialect({ pool }, schema) });
        await migrateTo(db, 'postgres', schema);
        await db.destroy();
        const store = new PostgresStore({ url, schema, poolSize: 2 });
        return {
          store,
          definitions: async () => {
            const client = new pg.Client({ connectionString: url });
            await client.connect();
            try {
              const { rows } = await client.query<{ name: string; def: string }>(
                'SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE schemaname = $1',
                [schema],
              );
              return Object.fromEntries(
                INDEXES.map((c) => [c, rows.find((r) => r.name === `records_${c}`)?.def ?? '']),
              );
            } finally {
              await client.end();
            }
          },
          close: async () => {
            await store.close();
            await adminQuery(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          },
        };
      }
    : undefined,
};

/** Every page of a filtered list, 3 records a page: the records' JSON in order. */
async function walk(store: Store, team: string, kind: RecordKind, filter: ListFilter): Promise<string[]> {
  const out: string[] = [];
  let after = 0;
  for (;;) {
    const page = await store.listPage({ team, kind, filter, after, limit: 3 });
    if (page.count > 0) out.push(page.items.toString('utf8'));
    if (!page.hasMore || !page.last) return out;
    after = page.last.seq;
  }
}

for (const backend of BACKENDS) {
  const open = openers[backend];
  const suite = open ? describe : describe.skip;
  const skipped = open ? '' : ' (skipped: PostgreSQL is not enabled: set PG_URL)';
  suite(`filter indexes without the team [${backend}]${skipped}`, () => {
    const opened: Opened[] = [];
    afterEach(async () => {
      for (const db of opened.splice(0)) await db.close();
    });

    it('migration 0009 upgrades a database in place: filtered lists read the same, of the asked team only', async () => {
      const db = await (open as () => Promise<Opened>)();
      opened.push(db);
      const { store } = db;
      const { teams } = await runDemo(store, { seed: 7, teams: 2, leads: 12, now: Date.parse('2026-11-01T00:00:00Z') });
      const [team, other] = teams as [string, string];
      const leadOf = async (t: string) => {
        const [first] = await store.listRecords({ team: t, kind: 'lead', after: 0, limit: 1 });
        return JSON.parse(first?.json as string) as { id: string; board: string; stage: string };
      };
      const lead = await leadOf(team);
      const foreign = await leadOf(other);
      const lists = async () => ({
        activities: await walk(store, team, 'activity', { by: 'lead', value: lead.id }),
        board: await walk(store, team, 'lead', { by: 'board', value: lead.board }),
        stage: await walk(store, team, 'lead', { by: 'stage', value: lead.stage }),
        foreign: await walk(store, team, 'activity', { by: 'lead', value: foreign.id }),
      });
      const before = await lists();
      expect(before.activities.length).toBeGreaterThan(0);
      expect(before.board.length).toBeGreaterThan(1);
      expect(before.foreign).toEqual([]);
      expect(Object.values(await db.definitions()).every((def) => def.includes('team'))).toBe(true);

      await store.migrate();
      expect(await store.pendingMigrations()).toEqual([]);
      expect(await lists()).toEqual(before);
      for (const [column, def] of Object.entries(await db.definitions())) {
        expect(def).toMatch(new RegExp(`\\(kind, ${column}, seq\\)`));
        expect(def).not.toContain('team');
      }
    });
  });
}

describe('Filtered lists on SQLite read their index', () => {
  let store: SqliteStore;
  beforeAll(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
  });
  afterAll(async () => store.close());

  it('a page by lead, board or stage, and whether more follow, are lookups in that column index', () => {
    const db = openSqliteFile(store.path, { readonly: true });
    try {
      for (const column of INDEXES) {
        const statement = statementsFor(SQLITE).listPage[column];
        const values = statement.values({ team: 't', kind: 'lead', value: 'x', after: 0, limit: 25 });
        const plan = db
          .prepare(`EXPLAIN QUERY PLAN ${statement.text}`)
          .all(...values)
          .map((row) => (row as { detail: string }).detail)
          .filter((step) => step.startsWith('SEARCH') || step.startsWith('SCAN records'));
        const lookup = `SEARCH records USING INDEX records_${column} (kind=? AND ${column}=? AND seq>?)`;
        expect(plan).toEqual([lookup, lookup]);
      }
    } finally {
      db.close();
    }
  });
});
