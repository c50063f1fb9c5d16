import { Kysely, type MigrationProvider, Migrator, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { RecordKind } from '../../schemas/enums.js';
import type {
  Entity,
  EntityKind,
  FeedRow,
  ListQuery,
  PageRow,
  SearchQuery,
  Store,
  StoredRecord,
  WriteTx,
} from '../store.js';
import { POSTGRES_MIGRATIONS } from './migrations.js';
import { type Db, entitiesQuery, postgresWriteTx, rows, upsertMeta } from './postgres-write-tx.js';
import { toEntity, toFeedRow, toPageRow, toStored } from './rows.js';
import { SchemaPostgresDialect } from './schema-introspector.js';

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` */
  url: string;
  /** Schema every query runs in (set as `search_path` on each connection). Default `public`. */
  schema?: string;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /** Per-statement limit, ms, set on every connection (lock waits included). Default 15 s. */
  statementTimeoutMs?: number;
}

const DEFAULTS = { schema: 'public', poolSize: 10, statementTimeoutMs: 15_000 } as const;
const IDLE_IN_TRANSACTION_MS = 60_000;
/** A plain identifier, so it can go into the connection `options` and DDL unquoted. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Serialization failure and deadlock: the transaction did nothing and can run again. */
const RETRYABLE_CODES = ['40001', '40P01'] as const;
const MAX_WRITE_ATTEMPTS = 8;
const FILTER_COLUMNS = { board: 'board', stage: 'stage', status: 'status', lead: 'lead' } as const;

/**
 * PostgreSQL backend: Kysely over a pg pool, one schema, READ COMMITTED write transactions. Inside a
 * write, a transaction holds its team's `feed_heads` row lock from its first row of that team to its
 * end and locks every row it reads (postgres-write-tx.ts): writers of one team are serialized, so
 * read-modify-write is as safe as on SQLite's single writer and feed positions follow commit order
 * (docs/feed-order.md). A deadlock or conflict rolls a transaction back and `write` runs the
 * callback again, so the callback must act only through the transaction it is given.
 */
export class PostgresStore implements Store {
  readonly backend = 'postgres' as const;
  readonly schema: string;
  private readonly url: string;
  private readonly db: Db;
  private closing: Promise<void> | undefined;

  constructor(options: PostgresStoreOptions) {
    this.url = options.url;
    this.schema = options.schema ?? DEFAULTS.schema;
    if (!SCHEMA_NAME.test(this.schema)) throw new Error('PostgreSQL schema must be a lower-case identifier');
    const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULTS.statementTimeoutMs;
    const pool = this.newPool(options.poolSize ?? DEFAULTS.poolSize, statementTimeoutMs);
    this.db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
  }

  private newPool(max: number, statementTimeoutMs: number): pg.Pool {
    const pool = new pg.Pool({
      connectionString: this.url,
      max,
      connectionTimeoutMillis: 10_000,
      // A process that hangs inside a transaction would hold its team's feed head lock: end such a
      // session after a minute so the team's other writers can go on.
      options: `-c search_path=${this.schema} -c statement_timeout=${statementTimeoutMs} -c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS}`,
    });
    // A dropped idle connection is removed from the pool and the next query opens a new one; without
    // a listener the 'error' event would end the process.
    pool.on('error', () => undefined);
    return pool;
  }

  async migrate(): Promise<void> {
    // Its own connection without a statement timeout: DDL on a large table may take longer than a query.
    const db = new Kysely<unknown>({ dialect: new SchemaPostgresDialect({ pool: this.newPool(1, 0) }, this.schema) });
    try {
      const provider: MigrationProvider = { getMigrations: async () => POSTGRES_MIGRATIONS };
      // The migrator's tables live in the same schema; it creates the schema when missing and holds
      // an advisory lock while it migrates, so several processes starting at once are safe.
      const migrator = new Migrator({ db, provider, migrationTableSchema: this.schema });
      const { error } = await migrator.migrateToLatest();
      if (error) throw error;
    } finally {
      await db.destroy();
    }
  }

  async write<T>(fn: (tx: WriteTx) => Promise<T>): Promise<T> {
    return this.transact((trx) => fn(postgresWriteTx(trx, this.schema)));
  }

  private async transact<T>(fn: (trx: Db) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        // READ COMMITTED is enough: the row locks taken inside make writers of the same rows wait.
        return await this.db.transaction().setIsolationLevel('read committed').execute(fn);
      } catch (err) {
        if (attempt >= MAX_WRITE_ATTEMPTS || !isRetryable(err)) throw err;
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(500, 5 * 2 ** attempt)));
      }
    }
  }

  async getEntity<S>(kind: EntityKind, id: string): Promise<Entity<S> | undefined> {
    const [row] = await rows(
      this.db,
      sql`SELECT kind, id, team, parent, state FROM entities WHERE kind = ${kind} AND id = ${id}`,
    );
    return toEntity<S>(row);
  }

  async findEntities<S>(kind: EntityKind, by: { team?: string; parent?: string }): Promise<Entity<S>[]> {
    return (await rows(this.db, entitiesQuery(kind, by, false))).map((r) => toEntity<S>(r) as Entity<S>);
  }

  async getRecord(kind: RecordKind, id: string): Promise<StoredRecord | undefined> {
    const [row] = await rows(
      this.db,
      sql`SELECT seq, kind, id, team, version, json, removed FROM records WHERE kind = ${kind} AND id = ${id}`,
    );
    return toStored(row);
  }

  async getRecords(kind: RecordKind, ids: readonly string[]): Promise<StoredRecord[]> {
    if (ids.length === 0) return [];
    const found = await rows(
      this.db,
      sql`SELECT seq, kind, id, team, version, json, removed FROM records
        WHERE kind = ${kind} AND id = ANY(${[...ids]}::text[]) AND removed IS NULL`,
    );
    return found.map((r) => toStored(r) as StoredRecord);
  }

  async listRecords(q: ListQuery): Promise<PageRow[]> {
    const filter = q.filter ? sql`AND ${sql.ref(FILTER_COLUMNS[q.filter.by])} = ${q.filter.value}` : sql``;
    const found = await rows(
      this.db,
      sql`SELECT seq, json FROM records WHERE team = ${q.team} AND kind = ${q.kind} ${filter}
        AND removed IS NULL AND seq > ${q.after} ORDER BY seq LIMIT ${q.limit}`,
    );
    return found.map(toPageRow);
  }

  async searchLeads(q: SearchQuery): Promise<PageRow[]> {
    const found = await rows(
      this.db,
      sql`SELECT seq, json FROM records WHERE team = ${q.team} AND kind = 'lead' AND removed IS NULL
        AND seq > ${q.after} AND (email = ${q.email ?? null} OR phone = ${q.phone ?? null}) ORDER BY seq LIMIT ${q.limit}`,
    );
    return found.map(toPageRow);
  }

  async readFeed(team: string, after: number, limit: number): Promise<FeedRow[]> {
    const found = await rows(
      this.db,
      sql`SELECT team, pos, kind, id, version, recorded_at, body, removed FROM feed
        WHERE team = ${team} AND pos > ${after} ORDER BY pos LIMIT ${limit}`,
    );
    return found.map(toFeedRow);
  }

  async feedHead(team: string): Promise<number> {
    const [row] = await rows(this.db, sql`SELECT last_pos FROM feed_heads WHERE team = ${team}`);
    return row ? Number(row.last_pos) : 0;
  }

  async trimFeed(removalsBefore: number, supersededBefore: number): Promise<number> {
    return this.transact(async (trx) => {
      const a = await sql`DELETE FROM feed WHERE removed IS NOT NULL AND recorded_at < ${removalsBefore}`.execute(trx);
      const b = await sql`DELETE FROM feed WHERE removed IS NULL AND EXISTS (
          SELECT 1 FROM feed newer WHERE newer.kind = feed.kind AND newer.id = feed.id
          AND newer.pos > feed.pos AND newer.team = feed.team AND newer.recorded_at < ${supersededBefore})`.execute(
        trx,
      );
      return Number(a.numAffectedRows ?? 0n) + Number(b.numAffectedRows ?? 0n);
    });
  }

  async getMeta(key: string): Promise<string | undefined> {
    const [row] = await rows(this.db, sql`SELECT value FROM meta WHERE key = ${key}`);
    return row?.value as string | undefined;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await upsertMeta(this.db, key, value);
  }

  async ping(): Promise<void> {
    await sql`SELECT 1`.execute(this.db);
  }

  async close(): Promise<void> {
    this.closing ??= this.db.destroy();
    await this.closing;
  }
}

function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (RETRYABLE_CODES as readonly unknown[]).includes(code);
}
