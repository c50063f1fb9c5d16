// `--into sqlite:PATH` (default) or `--into postgres://...`: the only file that loads a database driver.
import Database from 'better-sqlite3';
import { Kysely, type LogConfig, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { type MirrorDatabase, type MirrorDialect, migrateMirror } from './mirror-schema.js';

export interface OpenMirror {
  /** The query builder over the mirror's tables. */
  db: Kysely<MirrorDatabase>;
  /** Which SQL dialect the views use. */
  dialect: MirrorDialect;
  /** Closes the connection(s). */
  close(): Promise<void>;
}

/** Parses `--into`: `sqlite:PATH`, a bare path, or a `postgres://` / `postgresql://` URL. */
export function parseInto(into: string): { dialect: MirrorDialect; target: string } {
  if (/^postgres(ql)?:\/\//.test(into)) return { dialect: 'postgres', target: into };
  const path = into.startsWith('sqlite:') ? into.slice('sqlite:'.length) : into;
  if (path.length === 0) throw new Error('--into sqlite:PATH needs a path');
  return { dialect: 'sqlite', target: path };
}

/**
 * better-sqlite3 12 (the newest that loads on Node 20) aborts Node 24 when one of its Database or
 * Statement objects is garbage-collected (docs/runtime.md). Kysely prepares a statement for every
 * query, so the mirror hands Kysely a database whose `prepare` reuses one statement per SQL text
 * (Kysely's SQLite driver runs one query at a time, so a statement is never in use twice), and keeps
 * every connection and its statements referenced after it is closed and Kysely has let go of this
 * wrapper: none of them is ever collected.
 */
const retained = new Set<{ database: Database.Database; statements: Map<string, Database.Statement> }>();
function statementCachingDatabase(database: Database.Database) {
  const statements = new Map<string, Database.Statement>();
  retained.add({ database, statements });
  return {
    close: () => database.close(),
    prepare: (sql: string) => {
      let statement = statements.get(sql);
      if (!statement) {
        statement = database.prepare(sql);
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

/** Pool settings of a PostgreSQL mirror. */
const MIRROR_POOL = {
  max: 4,
  /** Longest wait for a connection, free or new: an unreachable server fails the page instead of hanging. */
  connectionTimeoutMillis: 10_000,
  /** Idle connections close after this; the sync sleeps between polls for a minute by default. */
  idleTimeoutMillis: 30_000,
  /** `application_name` (pg_stat_activity), unless the URL sets its own. */
  applicationName: 'crm-export-mirror',
} as const;

/**
 * A pg pool whose clients can never end the process with an 'error' event. pg-pool listens for a client's
 * errors only while it is idle; a connection lost while the sync engine writes (a terminated backend, a
 * failover) would emit 'error' on a checked-out client with no listener and crash the process. Each client
 * gets a listener for its whole life instead: the running statement fails (the page is not committed and
 * is fetched again), the pool drops the broken client and opens a new one for the next statement.
 */
function mirrorPool(url: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: MIRROR_POOL.max,
    connectionTimeoutMillis: MIRROR_POOL.connectionTimeoutMillis,
    idleTimeoutMillis: MIRROR_POOL.idleTimeoutMillis,
    application_name: MIRROR_POOL.applicationName,
  });
  const ignore = () => undefined;
  pool.on('connect', (client) => client.on('error', ignore));
  // pg-pool re-emits an idle client's error on the pool.
  pool.on('error', ignore);
  return pool;
}

/** Opens the mirror and creates its tables and views when missing. */
export async function openMirror(into: string, options: { log?: LogConfig } = {}): Promise<OpenMirror> {
  const { dialect, target } = parseInto(into);
  let db: Kysely<MirrorDatabase>;
  if (dialect === 'sqlite') {
    const database = new Database(target);
    // WAL keeps readers (plain SQL, `mirror status`) working while the sync writes; a committed page
    // survives a killed process.
    // With WAL, NORMAL survives a killed process; only an OS crash can lose the latest pages, and a page
    // is committed with its cursor, so the feed then simply delivers them again. (`exec`, not `pragma`:
    // it creates no statement object.)
    database.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000');
    db = new Kysely<MirrorDatabase>({
      dialect: new SqliteDialect({ database: statementCachingDatabase(database) }),
      log: options.log,
    });
  } else {
    db = new Kysely<MirrorDatabase>({ dialect: new PostgresDialect({ pool: mirrorPool(target) }), log: options.log });
  }
  await migrateMirror(db, dialect);
  return { db, dialect, close: () => db.destroy() };
}
