import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import pg from 'pg';
import { SchemaPostgresDialect } from '../../src/store/postgres/postgres-migrator.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { MIGRATIONS } from '../../src/store/sql/migrations.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { adminQuery, uniqueSchema } from './postgres.js';
import { openSqliteFile } from './sqlite-file.js';

// Upgrade tests: a database migrated only up to an older migration, the store over it (whose `migrate`
// applies the rest), and plain SQL on its tables to see what each step left.

/** A database migrated up to a given migration, its store, and plain SQL on its tables. */
export interface StoreAtMigration {
  store: Store;
  query(sql: string, values?: unknown[]): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

async function migrateTo(db: Kysely<unknown>, backend: 'sqlite' | 'postgres', upTo: string, schema?: string) {
  const provider = { getMigrations: async () => MIGRATIONS[backend] };
  const migrator = new Migrator({ db, provider, ...(schema ? { migrationTableSchema: schema } : {}) });
  const { error } = await migrator.migrateTo(upTo);
  if (error) throw error;
}

/** Each backend's opener; PostgreSQL's is undefined without `PG_URL`. */
export const storeAtMigration: Record<string, ((upTo: string) => Promise<StoreAtMigration>) | undefined> = {
  sqlite: async (upTo) => {
    const path = join(tmpdir(), `store-at-${process.pid}-${Math.random().toString(36).slice(2)}.db`);
    const file = openSqliteFile(path);
    await migrateTo(new Kysely<unknown>({ dialect: new SqliteDialect({ database: file }) }), 'sqlite', upTo);
    const store = new SqliteStore({ path });
    return {
      store,
      query: async (sql, values = []) => file.prepare(sql).all(...values) as Record<string, unknown>[],
      close: async () => {
        await store.close();
        file.close();
        for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
      },
    };
  },
  postgres: process.env.PG_URL
    ? async (upTo) => {
        const url = process.env.PG_URL as string;
        const schema = uniqueSchema();
        await adminQuery(url, `CREATE SCHEMA ${schema}`);
        const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
        const db = new Kysely<unknown>({ dialect: new SchemaPostgresDialect({ pool }, schema) });
        await migrateTo(db, 'postgres', upTo, schema);
        await db.destroy();
        const store = new PostgresStore({ url, schema, poolSize: 2 });
        return {
          store,
          query: async (sql, values = []) => {
            const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
            await client.connect();
            try {
              return (await client.query(sql, values)).rows as Record<string, unknown>[];
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
