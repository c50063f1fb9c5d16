import { CompiledQuery, Kysely, PostgresDialect, type PostgresQueryResult, sql } from 'kysely';
import type pg from 'pg';
import { POSTGRES_DEFAULTS as DEFAULTS } from '../backend-defaults.js';
import { POSTGRES } from '../sql/dialect.js';
import { auditColumns, type Row } from '../sql/rows.js';
import { SqlStore } from '../sql/sql-store.js';
import type { RunBatch } from '../sql/trim.js';
import type { Store, WriteTx } from '../store.js';
import type { AuditEntry, PoolUsage } from '../types.js';
import { StoreUnavailableError } from '../unavailable.js';
import { ClassifiedPool, type Db, listenedPool } from './postgres-connection.js';
import { migratePostgres } from './postgres-migrator.js';
import { PostgresWriteTx } from './postgres-write-tx.js';

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` */
  url: string;
  /** Schema every query runs in (set as `search_path` on each connection). Default `public`. */
  schema?: string;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /** Per-statement limit, ms, set on every connection (lock waits included). Default 15 s. */
  statementTimeoutMs?: number;
  /**
   * Longest wait, ms, for a pooled connection: a free one, or a new one to open. Default 10 s. Past it the
   * call fails as unavailable (503), so an exhausted pool or an unreachable server never holds a request.
   */
  connectTimeoutMs?: number;
  /** `application_name` of every connection (pg_stat_activity names the service by it). Default `crm-export`. */
  applicationName?: string;
}

const IDLE_IN_TRANSACTION_MS = 60_000;
/** A plain identifier, so it can go into the connection `options` and DDL unquoted. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Serialization failure and deadlock: the transaction did nothing and can run again. */
const RETRYABLE_CODES = ['40001', '40P01'] as const;
const MAX_WRITE_ATTEMPTS = 8;

/**
 * PostgreSQL backend: Kysely over a pg pool, one schema, READ COMMITTED write transactions. Inside a
 * write, a transaction holds its team's `feed_heads` row lock from its first row of that team to its
 * end and locks every row it reads (postgres-write-tx.ts): writers of one team are serialized, so
 * read-modify-write is as safe as on SQLite's single writer and feed positions follow commit order
 * (docs/feed-order.md). A deadlock or conflict rolls a transaction back and `write` runs the
 * callback again, so the callback must act only through the transaction it is given.
 */
export class PostgresStore extends SqlStore implements Store {
  declare readonly backend: 'postgres';
  readonly schema: string;
  private readonly url: string;
  private readonly applicationName: string;
  private readonly connectTimeoutMs: number;
  private readonly kysely: Db;
  private readonly pool: pg.Pool;
  private readonly classified: ClassifiedPool;
  private closing: Promise<void> | undefined;

  constructor(options: PostgresStoreOptions) {
    super(POSTGRES);
    this.url = options.url;
    this.schema = options.schema ?? DEFAULTS.schema;
    if (!SCHEMA_NAME.test(this.schema)) throw new Error('PostgreSQL schema must be a lower-case identifier');
    this.applicationName = options.applicationName ?? DEFAULTS.applicationName;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs;
    const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULTS.statementTimeoutMs;
    this.pool = this.newPool(options.poolSize ?? DEFAULTS.poolSize, statementTimeoutMs);
    this.classified = new ClassifiedPool(this.pool);
    this.kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: this.classified }) });
  }

  /** The query builder; once the store is closed every call fails as unavailable (`closed`). */
  private get db(): Db {
    if (this.closing) throw new StoreUnavailableError('closed');
    return this.kysely;
  }

  private newPool(max: number, statementTimeoutMs: number): pg.Pool {
    // Every client carries an error listener for its whole life (postgres-connection.ts): a connection lost under a
    // query fails that query only, and the pool opens a new connection for the next one.
    return listenedPool({
      connectionString: this.url,
      max,
      connectionTimeoutMillis: this.connectTimeoutMs,
      application_name: this.applicationName,
      // A process that hangs inside a transaction would hold its team's feed head lock: end such a
      // session after a minute so the team's other writers can go on. Every statement is named and so
      // planned once per connection (postgres-connection.ts), but by default PostgreSQL plans a statement again on each
      // call while its plan for the values at hand looks cheaper than the generic one, which a bound LIMIT
      // always does (it guesses a tenth of the rows): list and feed pages were planned on every call
      // (`EXPLAIN ANALYZE EXECUTE` shows it). Each read's generic plan uses its indexes; write
      // transactions go back to the default (`transact`).
      options: `-c search_path=${this.schema} -c statement_timeout=${statementTimeoutMs} -c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS} -c plan_cache_mode=force_generic_plan`,
    });
  }

  async migrate(): Promise<void> {
    await migratePostgres(this.newPool(1, 0), this.schema, this.migrations);
  }

  async reclaimSpace(): Promise<void> {
    // Like migrate: its own connection without a statement timeout, the rewrite of a table takes its time.
    const pool = this.newPool(1, 0);
    try {
      await pool.query('VACUUM FULL entities, records, feed, feed_heads');
    } finally {
      await pool.end();
    }
  }

  async write<T>(fn: (tx: WriteTx) => Promise<T>): Promise<T> {
    return this.transact((trx) => fn(new PostgresWriteTx(trx, this.schema)));
  }

  private async transact<T>(fn: (trx: Db) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        // READ COMMITTED is enough: the row locks taken inside make writers of the same rows wait.
        return await this.db
          .transaction()
          .setIsolationLevel('read committed')
          .execute(async (trx) => {
            // The write side's statements keep PostgreSQL's own choice of plan (see the pool's options):
            // with generic plans an ingest ran slower (docs/performance.md).
            await sql`SET LOCAL plan_cache_mode = auto`.execute(trx);
            return fn(trx);
          });
      } catch (err) {
        if (attempt >= MAX_WRITE_ATTEMPTS || !isRetryable(err)) throw err;
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(500, 5 * 2 ** attempt)));
      }
    }
  }

  /**
   * A statement outside a transaction, on a pooled connection without the query builder: a named prepared
   * statement (each connection parses and plans it once), the driver's errors classified (postgres-connection.ts).
   */
  private async query(text: string, values: unknown[] = []): Promise<PostgresQueryResult<Row>> {
    if (this.closing) throw new StoreUnavailableError('closed');
    const client = await this.classified.connect();
    try {
      return await client.query<Row>(text, values);
    } finally {
      // A client whose connection was lost is dropped by the pool, never handed out again (postgres-connection.ts).
      client.release();
    }
  }

  protected async all(text: string, values: unknown[] = []): Promise<Row[]> {
    return (await this.query(text, values)).rows;
  }

  /** A retention batch: each statement its own short transaction, so no lock or snapshot is held across the feed. */
  protected readonly trimBatch: RunBatch = (work) =>
    work(async (text, values) => {
      const result = await this.query(text, values);
      return { rows: result.rows, changes: result.rowCount };
    });

  async appendAudit(entry: AuditEntry): Promise<void> {
    await this.query(this.sql.appendAudit, auditColumns(entry));
  }

  /** A flush of the request log, usage counts and last uses: its statements in one transaction. */
  protected override get usageBatch(): RunBatch {
    return (work) =>
      this.transact((trx) =>
        work(async (text, values) => {
          const result = await trx.executeQuery<Row>(CompiledQuery.raw(text, values));
          return { rows: result.rows, changes: Number(result.numAffectedRows ?? 0) };
        }),
      );
  }

  poolUsage(): PoolUsage {
    const { pool } = this;
    return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max ?? 0 };
  }

  async close(): Promise<void> {
    this.closing ??= this.kysely.destroy();
    await this.closing;
  }
}

function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (RETRYABLE_CODES as readonly unknown[]).includes(code);
}
