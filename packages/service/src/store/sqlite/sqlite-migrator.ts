import type Database from 'better-sqlite3';
import { Kysely, type Migration, type MigrationProvider, Migrator, SqliteDialect } from 'kysely';
import { retain } from './sqlite-connection.js';

/** Applies pending migrations (sql/migrations.ts) with Kysely's migrator, on the store's writer connection. */
export async function migrateSqlite(writer: Database.Database, migrations: Record<string, Migration>): Promise<void> {
  // Kysely prepares a statement per query; route them through `retain` (sqlite-connection.ts).
  const database = { close: () => undefined, prepare: (sql: string) => retain(writer.prepare(sql)) };
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) });
  const provider: MigrationProvider = { getMigrations: async () => migrations };
  // Never db.destroy(): that would close the shared writer connection.
  const { error } = await new Migrator({ db, provider }).migrateToLatest();
  if (error) throw error;
}
