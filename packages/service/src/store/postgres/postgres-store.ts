import { Kysely, type MigrationProvider, Migrator, PostgresDialect, sql } from 'kysely';
import type pg from 'pg';
import type { RecordKind } from '../../schemas/enums.js';
import { auditColumns, toAuditEntry } from '../audit-rows.js';
import { POSTGRES_MIGRATIONS } from '../sql/migrations.js';
import type {
  AuditEntry,
  AuditQuery,
  Entity,
  EntityKind,
  ErasedRecord,
  FeedRow,
  JsonPage,
  LeadDetailRow,
  ListQuery,
  PageRow,
  PoolUsage,
  SearchQuery,
  Store,
  StoredRecord,
  TrimBatch,
  TrimOptions,
  WriteTx,
} from '../store.js';
import { TRIM_BATCH_ROWS } from '../store.js';
import { StoreUnavailableError, toStoreError } from '../unavailable.js';
import { ClassifiedPool, listenedPool } from './pool.js';
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
  /**
   * Longest wait, ms, for a pooled connection: a free one, or a new one to open. Default 10 s. Past it the
   * call fails as unavailable (503), so an exhausted pool or an unreachable server never holds a request.
   */
  connectTimeoutMs?: number;
  /** `application_name` of every connection (pg_stat_activity names the service by it). Default `crm-export`. */
  applicationName?: string;
}

const DEFAULTS = {
  schema: 'public',
  poolSize: 10,
  statementTimeoutMs: 15_000,
  connectTimeoutMs: 10_000,
  applicationName: 'crm-export',
} as const;
const IDLE_IN_TRANSACTION_MS = 60_000;
/** A plain identifier, so it can go into the connection `options` and DDL unquoted. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Serialization failure and deadlock: the transaction did nothing and can run again. */
const RETRYABLE_CODES = ['40001', '40P01'] as const;
const MAX_WRITE_ATTEMPTS = 8;
const FILTER_COLUMNS = { board: 'board', stage: 'stage', status: 'status', lead: 'lead' } as const;

/**
 * One keyset page in one statement: the page's bodies joined by the database (string_agg, one text value
 * per page), its size, last position and id, and whether a live row follows it. $1 team, $2 kind,
 * $3 after, $4 limit, $5 the filter's value.
 */
function listPageSql(filter: string): string {
  const where = `team = $1 AND kind = $2 ${filter} AND removed IS NULL`;
  return `SELECT p.items, p.n, p.last_seq, p.last_id,
      p.n = $4 AND EXISTS (SELECT 1 FROM records WHERE ${where} AND seq > p.last_seq) AS more
    FROM (SELECT string_agg(json, ',' ORDER BY seq) AS items, count(*)::int AS n, max(seq) AS last_seq,
        (array_agg(id ORDER BY seq DESC))[1] AS last_id
      FROM (SELECT seq, id, json FROM records WHERE ${where} AND seq > $3 ORDER BY seq LIMIT $4) s) p`;
}
type PageVariant = 'none' | keyof typeof FILTER_COLUMNS;
const LIST_PAGE_SQL = {
  none: listPageSql(''),
  ...Object.fromEntries(Object.entries(FILTER_COLUMNS).map(([by, col]) => [by, listPageSql(`AND ${col} = $5`)])),
} as Record<PageVariant, string>;

/** The lead with its two facets spliced in before its closing brace, and its team, from one statement. */
const LEAD_DETAIL_SQL = `SELECT l.team, left(l.json, -1) || ',"attribution":' || coalesce(a.json, 'null')
    || ',"response":' || coalesce(r.json, 'null') || '}' AS body
  FROM records l
  LEFT JOIN records a ON a.kind = 'lead_attribution' AND a.id = l.id
  LEFT JOIN records r ON r.kind = 'lead_response' AND r.id = l.id
  WHERE l.kind = 'lead' AND l.id = $1 AND l.removed IS NULL AND l.json IS NOT NULL`;
const EMPTY = Buffer.alloc(0);

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
  private readonly applicationName: string;
  private readonly connectTimeoutMs: number;
  private readonly kysely: Db;
  private readonly pool: pg.Pool;
  private closing: Promise<void> | undefined;

  constructor(options: PostgresStoreOptions) {
    this.url = options.url;
    this.schema = options.schema ?? DEFAULTS.schema;
    if (!SCHEMA_NAME.test(this.schema)) throw new Error('PostgreSQL schema must be a lower-case identifier');
    this.applicationName = options.applicationName ?? DEFAULTS.applicationName;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs;
    const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULTS.statementTimeoutMs;
    this.pool = this.newPool(options.poolSize ?? DEFAULTS.poolSize, statementTimeoutMs);
    const pool = new ClassifiedPool(this.pool);
    this.kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
  }

  /** The query builder; once the store is closed every call fails as unavailable (`closed`). */
  private get db(): Db {
    if (this.closing) throw new StoreUnavailableError('closed');
    return this.kysely;
  }

  private newPool(max: number, statementTimeoutMs: number): pg.Pool {
    // Every client carries an error listener for its whole life (pool.ts): a connection lost under a
    // query fails that query only, and the pool opens a new connection for the next one.
    return listenedPool({
      connectionString: this.url,
      max,
      connectionTimeoutMillis: this.connectTimeoutMs,
      application_name: this.applicationName,
      // A process that hangs inside a transaction would hold its team's feed head lock: end such a
      // session after a minute so the team's other writers can go on.
      options: `-c search_path=${this.schema} -c statement_timeout=${statementTimeoutMs} -c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS}`,
    });
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

  async erasedRecords(): Promise<ErasedRecord[]> {
    const found = await rows(
      this.db,
      sql`SELECT kind, id, team, updated_at FROM records WHERE removed = 'erased' ORDER BY updated_at, kind, id`,
    );
    return found.map((r) => ({
      kind: r.kind as RecordKind,
      id: r.id as string,
      team: r.team as string,
      erasedAt: String(r.updated_at),
    }));
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

  /**
   * A hot read as a named prepared statement on the pool (each connection parses and plans it once),
   * without the query builder; the driver's errors are classified like every other call's.
   */
  private async prepared(name: string, text: string, values: unknown[]): Promise<Record<string, unknown>[]> {
    if (this.closing) throw new StoreUnavailableError('closed');
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw toStoreError(error, 'connect');
    }
    try {
      return (await client.query({ name, text, values })).rows;
    } catch (error) {
      throw toStoreError(error, 'query');
    } finally {
      // A client whose connection was lost is dropped by the pool, never handed out again (pool.ts).
      client.release();
    }
  }

  async listPage(q: ListQuery): Promise<JsonPage> {
    const variant: PageVariant = q.filter ? q.filter.by : 'none';
    const values: unknown[] = [q.team, q.kind, q.after, q.limit];
    if (q.filter) values.push(q.filter.value);
    const [row] = await this.prepared(`list-page-${variant}`, LIST_PAGE_SQL[variant], values);
    const items = row?.items as string | null | undefined;
    return {
      items: items ? Buffer.from(items) : EMPTY,
      count: Number(row?.n ?? 0),
      hasMore: row?.more === true,
      last: row?.last_seq == null ? null : { seq: Number(row.last_seq), id: row.last_id as string },
    };
  }

  async leadDetail(id: string): Promise<LeadDetailRow | undefined> {
    const [row] = await this.prepared('lead-detail', LEAD_DETAIL_SQL, [id]);
    return row ? { team: row.team as string, body: Buffer.from(row.body as string) } : undefined;
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
      // An entry without a body of its own is its record's current version: the body is the row's JSON. The
      // page is cut first and each of its entries then looks up its record: as a join, a planner with no
      // statistics joined the team's whole feed before the limit (17 pages/s on 40,000 entries, measured).
      sql`SELECT f.team, f.pos, f.kind, f.id, f.version, f.recorded_at, f.removed,
          CASE WHEN f.body IS NOT NULL THEN f.body
            WHEN f.removed IS NULL THEN (SELECT r.json FROM records r WHERE r.kind = f.kind AND r.id = f.id) END AS body
        FROM (SELECT * FROM feed WHERE team = ${team} AND pos > ${after} ORDER BY pos LIMIT ${limit}) f
        ORDER BY f.pos`,
    );
    return found.map(toFeedRow);
  }

  async feedHead(team: string): Promise<number> {
    const [row] = await rows(this.db, sql`SELECT last_pos FROM feed_heads WHERE team = ${team}`);
    return row ? Number(row.last_pos) : 0;
  }

  async trimFeed(removalsBefore: number, supersededBefore: number, options: TrimOptions = {}): Promise<number> {
    // Batches of one statement each (its own short transaction): no lock or snapshot is held across the feed.
    const size = options.batchSize ?? TRIM_BATCH_ROWS;
    let dropped = 0;
    const report = (rule: TrimBatch['rule'], examined: number, deleted: number) => {
      dropped += deleted;
      options.onBatch?.({ rule, examined, deleted });
      return examined === size && !options.signal?.aborted;
    };
    // Expired removals, oldest first, through the partial index feed_removals. Rows are chosen by ctid (a TID
    // scan): joining on the key let the planner pick a scan of the whole table for a batch of 1,000.
    for (;;) {
      const result = await sql`DELETE FROM feed WHERE ctid = ANY(ARRAY(
          SELECT ctid FROM feed WHERE removed IS NOT NULL AND recorded_at < ${removalsBefore}
          ORDER BY recorded_at LIMIT ${size}))`.execute(this.db);
      const deleted = Number(result.numAffectedRows ?? 0n);
      if (!report('removals', deleted, deleted)) break;
    }
    if (options.signal?.aborted) return dropped;
    // Superseded entries: a window of `size` rows in primary-key order, each checked against the newer
    // entries of its record (index feed_record); the next window starts after this one's last row.
    let after: { team: string; pos: number } = { team: '', pos: 0 };
    for (;;) {
      const [row] = await rows(
        this.db,
        sql`WITH w AS (
            SELECT ctid, team, pos FROM feed WHERE (team, pos) > (${after.team}, ${after.pos})
            ORDER BY team, pos LIMIT ${size}
          ), d AS (
            DELETE FROM feed WHERE ctid = ANY(ARRAY(SELECT ctid FROM w)) AND removed IS NULL
            AND EXISTS (SELECT 1 FROM feed newer WHERE newer.kind = feed.kind AND newer.id = feed.id
              AND newer.pos > feed.pos AND newer.team = feed.team AND newer.recorded_at < ${supersededBefore})
            RETURNING 1
          ), last AS (SELECT team, pos FROM w ORDER BY team DESC, pos DESC LIMIT 1)
          SELECT (SELECT count(*) FROM w) AS examined, (SELECT count(*) FROM d) AS deleted,
            (SELECT team FROM last) AS team, (SELECT pos FROM last) AS pos`,
      );
      const examined = Number(row?.examined ?? 0);
      if (examined > 0) after = { team: row?.team as string, pos: Number(row?.pos) };
      if (!report('superseded', examined, Number(row?.deleted ?? 0))) break;
    }
    return dropped;
  }

  async getMeta(key: string): Promise<string | undefined> {
    const [row] = await rows(this.db, sql`SELECT value FROM meta WHERE key = ${key}`);
    return row?.value as string | undefined;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await upsertMeta(this.db, key, value);
  }

  async appendAudit(entry: AuditEntry): Promise<void> {
    const [at, actor, action, target, outcome, details] = auditColumns(entry);
    await sql`INSERT INTO audit (at, actor, action, target, outcome, details)
      VALUES (${at}, ${actor}, ${action}, ${target}, ${outcome}, ${details})`.execute(this.db);
  }

  async listAudit(query: AuditQuery): Promise<AuditEntry[]> {
    const where = [sql`true`];
    if (query.since !== undefined) where.push(sql`at >= ${query.since}`);
    if (query.until !== undefined) where.push(sql`at < ${query.until}`);
    const { action, target } = query;
    if (action !== undefined)
      where.push(sql`(action = ${action} OR substr(action, 1, length(${action}) + 1) = ${action} || '.')`);
    if (query.actor !== undefined) where.push(sql`actor = ${query.actor}`);
    if (target !== undefined) where.push(sql`strpos(',' || target || ',', ',' || ${target} || ',') > 0`);
    const found = await rows(
      this.db,
      sql`SELECT at, actor, action, target, outcome, details FROM audit
        WHERE ${sql.join(where, sql` AND `)} ORDER BY seq DESC LIMIT ${query.limit}`,
    );
    return found.reverse().map(toAuditEntry);
  }

  async ping(): Promise<void> {
    await sql`SELECT 1`.execute(this.db);
  }

  async pendingMigrations(): Promise<string[]> {
    // On the serving pool (readiness asks every few seconds); no migration table yet: nothing is applied.
    const [table] = await rows(this.db, sql`SELECT to_regclass('kysely_migration') IS NOT NULL AS present`);
    if (!table?.present) return Object.keys(POSTGRES_MIGRATIONS);
    const found = await rows(this.db, sql`SELECT name FROM kysely_migration`);
    const applied = new Set(found.map((row) => row.name as string));
    return Object.keys(POSTGRES_MIGRATIONS).filter((name) => !applied.has(name));
  }

  async feedHeadTimes(): Promise<{ team: string; recordedAt: number }[]> {
    const found = await rows(
      this.db,
      sql`SELECT h.team, f.recorded_at FROM feed_heads h JOIN feed f ON f.team = h.team AND f.pos = h.last_pos`,
    );
    return found.map((row) => ({ team: row.team as string, recordedAt: Number(row.recorded_at) }));
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
