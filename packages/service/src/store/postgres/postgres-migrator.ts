import {
  type DatabaseIntrospector,
  type DatabaseMetadata,
  Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  PostgresDialect,
  type PostgresDialectConfig,
  type SchemaMetadata,
  sql,
  type TableMetadata,
} from 'kysely';
import type pg from 'pg';

// Kysely's migrator asks the introspector whether its tables exist. The stock PostgreSQL
// introspector reads every column of every schema, calling functions that fail when another
// schema is dropped meanwhile (tests drop theirs all the time) and that get slow on a large
// database. The migrator only needs table names of its own schema.

class SchemaIntrospector implements DatabaseIntrospector {
  constructor(
    private readonly db: Kysely<unknown>,
    private readonly schema: string,
  ) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    const { rows } = await sql<{ name: string }>`SELECT nspname AS name FROM pg_catalog.pg_namespace`.execute(this.db);
    return rows;
  }

  async getTables(): Promise<TableMetadata[]> {
    const { rows } = await sql<{ name: string }>`SELECT c.relname AS name FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${this.schema} AND c.relkind IN ('r', 'p')`.execute(this.db);
    return rows.map((r) => ({ name: r.name, schema: this.schema, isView: false, columns: [] }));
  }

  async getMetadata(): Promise<DatabaseMetadata> {
    return { tables: await this.getTables() };
  }
}

/** The PostgreSQL dialect with an introspector that sees only `schema` (for the migrator). */
export class SchemaPostgresDialect extends PostgresDialect {
  constructor(
    config: PostgresDialectConfig,
    private readonly schema: string,
  ) {
    super(config);
  }

  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SchemaIntrospector(db, this.schema);
  }
}

/**
 * Applies pending migrations (sql/migrations.ts) with Kysely's migrator on `pool` (its own connection,
 * without a statement timeout: DDL on a large table may take longer than a query), then ends the pool.
 */
export async function migratePostgres(pool: pg.Pool, schema: string, migrations: Record<string, Migration>) {
  const db = new Kysely<unknown>({ dialect: new SchemaPostgresDialect({ pool }, schema) });
  try {
    const provider: MigrationProvider = { getMigrations: async () => migrations };
    // The migrator's tables live in the same schema; it creates the schema when missing and holds
    // an advisory lock while it migrates, so several processes starting at once are safe.
    const migrator = new Migrator({ db, provider, migrationTableSchema: schema });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  } finally {
    await db.destroy();
  }
}
