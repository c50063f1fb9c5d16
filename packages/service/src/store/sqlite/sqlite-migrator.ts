import type Database from 'better-sqlite3';
import type { Migration, MigrationProvider } from 'kysely';
import { retain } from './sqlite-connection.js';

/**
 * Applies pending migrations (sql/migrations.ts) with Kysely's migrator, on the store's writer connection.
 * When the database records exactly this build's migrations (every start but a release's first), there is
 * nothing to do and Kysely is not loaded: its 260 modules were a sixth of a server's start-up. Any other
 * state, a migration missing or one this build does not know, goes to Kysely's migrator as before.
 */
export async function migrateSqlite(writer: Database.Database, migrations: Record<string, Migration>): Promise<void> {
  if (recordsExactly(writer, Object.keys(migrations))) return;
  const { Kysely, Migrator, SqliteDialect } = await import('kysely');
  // Kysely prepares a statement per query; route them through `retain` (sqlite-connection.ts).
  const database = { close: () => undefined, prepare: (sql: string) => retain(writer.prepare(sql)) };
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) });
  const provider: MigrationProvider = { getMigrations: async () => migrations };
  // Never db.destroy(): that would close the shared writer connection.
  const { error } = await new Migrator({ db, provider }).migrateToLatest();
  if (error) throw error;
}

/** Whether the migrator's table names exactly `names`, no more and no fewer. */
function recordsExactly(writer: Database.Database, names: readonly string[]): boolean {
  const table = retain(
    writer.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kysely_migration'"),
  );
  if (table.get() === undefined) return false;
  const applied = retain(writer.prepare('SELECT name FROM kysely_migration')).pluck().all() as string[];
  const known = new Set(names);
  return applied.length === known.size && applied.every((name) => known.has(name));
}
