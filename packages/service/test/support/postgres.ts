import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.js';

// Every test store gets its own schema in the shared test database, so concurrent test files and
// runs never see each other's data; closing the store drops the schema.

/** A fresh schema name: `t_<pid>_<random>`. */
export function uniqueSchema(): string {
  return `t_${process.pid}_${randomBytes(6).toString('hex')}`;
}

/** Runs one statement on a short-lived connection (schema setup and teardown). */
export async function adminQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

class TestPostgresStore extends PostgresStore {
  private readonly adminUrl: string;
  private closed = false;

  constructor(options: PostgresStoreOptions & { schema: string }) {
    super(options);
    this.adminUrl = options.url;
  }

  override async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await super.close();
    await adminQuery(this.adminUrl, `DROP SCHEMA IF EXISTS ${this.schema} CASCADE`);
  }
}

/**
 * A migrated store in a new schema of `url`'s database; `close()` drops the schema and ends the pool. Its
 * connections carry the schema's name as `application_name` unless told otherwise, so a test can find (and
 * terminate) its own backends and no others.
 */
export async function makeTestPostgresStore(
  url: string,
  options: Omit<PostgresStoreOptions, 'url' | 'schema'> = {},
): Promise<PostgresStore> {
  const schema = uniqueSchema();
  await adminQuery(url, `CREATE SCHEMA ${schema}`);
  const store = new TestPostgresStore({ applicationName: schema, ...options, url, schema });
  try {
    await store.migrate();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
