import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, type MigrationProvider, Migrator, SqliteDialect } from 'kysely';
import { base62 } from '../../ids.js';
import type { FeedKind, RecordKind, RemovalReason } from '../../schemas/enums.js';
import { auditColumns, toAuditEntry } from '../audit-rows.js';
import { SQLITE_MIGRATIONS } from '../sql/migrations.js';
import type {
  AuditEntry,
  AuditQuery,
  Entity,
  EntityKind,
  ErasedRecord,
  FeedEntry,
  FeedRow,
  JsonPage,
  LeadDetailRow,
  ListQuery,
  PageRow,
  RecordRemoval,
  RecordRow,
  SearchQuery,
  Store,
  StoredRecord,
  TrimBatch,
  TrimOptions,
  WriteSet,
  WriteTx,
} from '../store.js';
import { borrowBodies, DatabaseMissingError, TRIM_BATCH_ROWS } from '../store.js';
import { toStoreError } from '../unavailable.js';

export interface SqliteStoreOptions {
  /** A file path, or `:memory:` for a throw-away database (a temp file, so readers can share it). */
  path: string;
  /** Refuse a file that does not exist instead of creating it (and its folder). */
  mustExist?: boolean;
}

type Row = Record<string, unknown>;
const EMPTY = Buffer.alloc(0);
type Stmt = Database.Statement<unknown[], Row>;

const FILTER_COLUMNS = { board: 'board', stage: 'stage', status: 'status', lead: 'lead' } as const;

/**
 * One keyset page in one statement: the page's bodies joined by the database into one BLOB (UTF-8 bytes,
 * no string built per row or per page in JavaScript), its size, its last position and id (a bare column
 * beside max() takes the values of the row holding the max), and whether a live row follows it.
 * The ORDER BY inside group_concat is what makes the order a promise: SQLite calls an aggregate's input
 * order arbitrary otherwise, even over an ordered subquery. It sorts the page's 100 rows once more (about
 * a third more CPU for this statement, measured), the price of a page that can never come out reordered.
 */
function listPageSql(filter: string): string {
  const where = `team = @team AND kind = @kind ${filter} AND removed IS NULL`;
  return `SELECT p.items, p.n, p.last_seq, p.last_id,
      p.n = @limit AND EXISTS (SELECT 1 FROM records WHERE ${where} AND seq > p.last_seq) AS more
    FROM (SELECT CAST(group_concat(json, ',' ORDER BY seq) AS BLOB) AS items, count(*) AS n, max(seq) AS last_seq, id AS last_id
      FROM (SELECT seq, id, json FROM records WHERE ${where} AND seq > @after ORDER BY seq LIMIT @limit)) p`;
}
const LIST_PAGE_SQL = {
  none: listPageSql(''),
  ...Object.fromEntries(Object.entries(FILTER_COLUMNS).map(([by, col]) => [by, listPageSql(`AND ${col} = @value`)])),
} as Record<'none' | keyof typeof FILTER_COLUMNS, string>;

/** The lead with its two facets spliced in before its closing brace, and its team, from one statement. */
const LEAD_DETAIL_SQL = `SELECT l.team AS team,
    CAST(substr(l.json, 1, length(l.json) - 1) || ',"attribution":' || coalesce(a.json, 'null')
      || ',"response":' || coalesce(r.json, 'null') || '}' AS BLOB) AS body
  FROM records l
  LEFT JOIN records a ON a.kind = 'lead_attribution' AND a.id = l.id
  LEFT JOIN records r ON r.kind = 'lead_response' AND r.id = l.id
  WHERE l.kind = 'lead' AND l.id = ? AND l.removed IS NULL AND l.json IS NOT NULL`;

/**
 * better-sqlite3 12 aborts the process on Node 24 when a Database or Statement is garbage-collected
 * outside a Node context (upstream WiseLibs/better-sqlite3#1515; v13 fixes it but needs Node 22).
 * Handles are therefore kept referenced for the life of the process, closed but never collected.
 * A server opens one store, so this only adds up in test runs that open hundreds.
 */
const retainedHandles = new Set<unknown>();
function retain<T>(handle: T): T {
  retainedHandles.add(handle);
  return handle;
}

/**
 * SQLite backend. One writer connection (SQLite has one writer at a time, so writes queue on a
 * mutex) and one reader connection: in WAL mode the reader never sees a write transaction that is
 * still open while its async body awaits. Hot statements are prepared once and run on
 * better-sqlite3 directly: building rows through a query builder per request costs as much as the
 * request itself (docs/performance.md). Kysely runs the versioned migrations.
 */
export class SqliteStore implements Store {
  readonly backend = 'sqlite' as const;
  readonly path: string;
  private readonly temporary: boolean;
  private readonly writer: Database.Database;
  private reader: Database.Database | undefined;
  private readonly writerStmts = new Map<string, Stmt>();
  private readonly readerStmts = new Map<string, Stmt>();
  private queue: Promise<unknown> = Promise.resolve();
  /** Set when a transaction erased a record: its old versions may still be in WAL frames until a checkpoint. */
  private scrubWal = false;

  constructor(options: SqliteStoreOptions) {
    this.temporary = options.path === ':memory:';
    this.path = this.temporary ? join(tmpdir(), `crm-export-${process.pid}-${base62(10)}.db`) : options.path;
    if (options.mustExist && !this.temporary && !existsSync(this.path)) {
      throw new DatabaseMissingError(`no database at ${this.path}`);
    }
    mkdirSync(dirname(this.path), { recursive: true });
    this.writer = retain(new Database(this.path));
    this.writer.exec(
      'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON',
    );
    // Deleted and overwritten rows are zeroed, not left in free space: erased data is not recoverable from
    // the file (docs/write-side.md, "Erasure and storage").
    this.writer.exec('PRAGMA secure_delete = ON');
    // 64 MiB of pages for the writer (the default is 2 MiB): every write walks the records, entities
    // and feed indexes, and at millions of rows each miss is a read from the file.
    this.writer.exec('PRAGMA cache_size = -65536');
    // The WAL file keeps the size of the largest transaction it ever held unless told otherwise: after
    // a checkpoint it is cut back to 4 MiB (about what an automatic checkpoint lets it reach).
    this.writer.exec('PRAGMA journal_size_limit = 4194304');
  }

  private migrator(): Migrator {
    // Kysely prepares a statement per query; route them through `retain` (see above).
    const writer = this.writer;
    const database = { close: () => undefined, prepare: (sql: string) => retain(writer.prepare(sql)) };
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) });
    const provider: MigrationProvider = { getMigrations: async () => SQLITE_MIGRATIONS };
    // Never db.destroy(): that would close the shared writer connection.
    return new Migrator({ db, provider });
  }

  async migrate(): Promise<void> {
    const { error } = await this.migrator().migrateToLatest();
    if (error) throw error;
  }

  private readDb(): Database.Database {
    if (!this.reader) {
      this.reader = retain(new Database(this.path, { readonly: true, fileMustExist: true }));
      this.reader.exec('PRAGMA busy_timeout = 5000; PRAGMA secure_delete = ON');
    }
    return this.reader;
  }

  private w(sql: string): Stmt {
    let s = this.writerStmts.get(sql);
    if (!s) {
      s = retain(this.writer.prepare(sql)) as Stmt;
      this.writerStmts.set(sql, s);
    }
    return s;
  }

  private r(sql: string): Stmt {
    let s = this.readerStmts.get(sql);
    if (!s) {
      s = retain(this.readDb().prepare(sql)) as Stmt;
      this.readerStmts.set(sql, s);
    }
    return s;
  }

  async write<T>(fn: (tx: WriteTx) => Promise<T>): Promise<T> {
    const run = this.queue.then(async () => {
      try {
        this.writer.exec('BEGIN IMMEDIATE');
        try {
          const result = await fn(this.tx);
          this.writer.exec('COMMIT');
          if (this.scrubWal) this.checkpointAfterErasure();
          return result;
        } catch (err) {
          if (this.writer.inTransaction) this.writer.exec('ROLLBACK');
          throw err;
        }
      } catch (err) {
        // A busy or failing file is a passing fault (unavailable.ts); anything else is passed on as is.
        throw toStoreError(err);
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Runs a read on the driver, its temporary failures turned into `StoreUnavailableError` (unavailable.ts). */
  private read<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw toStoreError(err);
    }
  }

  /**
   * Copies the WAL into the (secure-deleting) database file and truncates it, so erased data survives in
   * neither file. A reader in another process can hold the WAL (busy): then the next commit tries again.
   */
  private checkpointAfterErasure(): void {
    // A cached, retained statement rather than `pragma()`, which prepares a new one each call (see `retain`).
    const result = this.w('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number } | undefined;
    this.scrubWal = (result?.busy ?? 0) !== 0;
  }

  private putEntityRow(e: Entity<unknown>): void {
    this.w(
      `INSERT INTO entities (kind, id, team, parent, state) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (kind, id) DO UPDATE SET team = excluded.team, parent = excluded.parent, state = excluded.state`,
    ).run(e.kind, e.id, e.team, e.parent, JSON.stringify(e.state));
  }

  /** Before a record row is replaced: the entry of its version borrows its JSON and gets its own copy. */
  private keepSupersededBody(kind: RecordKind, id: string): void {
    this.w(
      `UPDATE feed SET body = (SELECT json FROM records WHERE kind = ? AND id = ?)
       WHERE kind = ? AND id = ? AND body IS NULL AND removed IS NULL`,
    ).run(kind, id, kind, id);
  }

  private putRecordRow(r: RecordRow): void {
    this.w(
      `INSERT INTO records (kind, id, team, lead, board, stage, status, email, phone, version, updated_at, json, removed)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
       ON CONFLICT (kind, id) DO UPDATE SET team = excluded.team, lead = excluded.lead, board = excluded.board,
         stage = excluded.stage, status = excluded.status, email = excluded.email, phone = excluded.phone,
         version = excluded.version, updated_at = excluded.updated_at, json = excluded.json, removed = NULL`,
    ).run(r.kind, r.id, r.team, r.lead, r.board, r.stage, r.status, r.email, r.phone, r.version, r.updatedAt, r.json);
  }

  private removeRecordRow(r: RecordRemoval): void {
    if (r.reason === 'erased') this.scrubWal = true;
    this.w(
      `UPDATE records SET removed = ?, version = ?, updated_at = ?, json = NULL, email = NULL, phone = NULL
       WHERE kind = ? AND id = ?`,
    ).run(r.reason, r.version, r.at, r.kind, r.id);
  }

  private insertFeedRow(e: FeedEntry, pos: number): void {
    this.w(
      'INSERT INTO feed (team, pos, kind, id, version, recorded_at, body, removed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(e.team, pos, e.kind, e.id, e.version, e.recordedAt, e.body, e.removed);
  }

  /** Buffered writes: SQLite runs in this process, so a cached statement per row costs no round trip. */
  private applyWrites(w: WriteSet): void {
    const deleteEntity = this.w('DELETE FROM entities WHERE kind = ? AND id = ?');
    for (const e of w.deleteEntities) deleteEntity.run(e.kind, e.id);
    for (const e of w.putEntities) this.putEntityRow(e);
    for (const r of w.supersede) this.keepSupersededBody(r.kind, r.id);
    for (const r of w.putRecords) this.putRecordRow(r);
    for (const r of w.removeRecords) this.removeRecordRow(r);
    const purge = this.w('DELETE FROM feed WHERE kind = ? AND id = ?');
    for (const p of w.purgeFeed) purge.run(p.kind, p.id);
    const heads = new Map<string, number>();
    for (const e of borrowBodies(w)) {
      this.insertFeedRow(e, e.pos);
      heads.set(e.team, Math.max(e.pos, heads.get(e.team) ?? 0));
    }
    const head = this.w(
      `INSERT INTO feed_heads (team, last_pos) VALUES (?, ?)
       ON CONFLICT (team) DO UPDATE SET last_pos = max(last_pos, excluded.last_pos)`,
    );
    for (const [team, pos] of heads) head.run(team, pos);
  }

  private readonly tx: WriteTx = {
    getEntity: async <S>(kind: EntityKind, id: string) =>
      toEntity<S>(this.w('SELECT kind, id, team, parent, state FROM entities WHERE kind = ? AND id = ?').get(kind, id)),
    findEntities: async <S>(kind: EntityKind, by: { team?: string; parent?: string }) =>
      this.findEntitiesOn<S>((sql) => this.w(sql), kind, by),
    putEntity: async <S>(e: Entity<S>) => this.putEntityRow(e),
    deleteEntity: async (kind: EntityKind, id: string) => {
      this.w('DELETE FROM entities WHERE kind = ? AND id = ?').run(kind, id);
    },
    getRecord: async (kind: RecordKind, id: string) =>
      toStored(
        this.w('SELECT seq, kind, id, team, version, json, removed FROM records WHERE kind = ? AND id = ?').get(
          kind,
          id,
        ),
      ),
    putRecord: async (r: RecordRow) => {
      this.keepSupersededBody(r.kind, r.id);
      this.putRecordRow(r);
    },
    removeRecord: async (kind: RecordKind, id: string, reason: RemovalReason, version: number, at: string) =>
      this.removeRecordRow({ kind, id, reason, version, at }),
    appendFeed: async (e: FeedEntry) => {
      const head = this.w(
        `INSERT INTO feed_heads (team, last_pos) VALUES (?, 1)
         ON CONFLICT (team) DO UPDATE SET last_pos = last_pos + 1 RETURNING last_pos`,
      ).get(e.team) as { last_pos: number };
      this.insertFeedRow(e, head.last_pos);
      return head.last_pos;
    },
    purgeFeed: async (kind: FeedKind, id: string) => {
      this.w('DELETE FROM feed WHERE kind = ? AND id = ?').run(kind, id);
    },
    trimSupersededFeed: async (team: string, after: number) =>
      this.w(
        `DELETE FROM feed WHERE (team, pos) IN (
           SELECT old.team, old.pos FROM feed newer
           JOIN feed old ON old.kind = newer.kind AND old.id = newer.id AND old.pos < newer.pos AND old.team = newer.team
           WHERE newer.team = ? AND newer.pos > ? AND old.removed IS NULL)`,
      ).run(team, after).changes,
    // The writer connection is the only writer: the head read stays true until this transaction ends.
    lockFeedHead: async (team: string) =>
      (this.w('SELECT last_pos FROM feed_heads WHERE team = ?').get(team) as { last_pos: number } | undefined)
        ?.last_pos ?? 0,
    applyWrites: async (writes: WriteSet) => this.applyWrites(writes),
    getMeta: async (key: string) => this.metaOn((sql) => this.w(sql), key),
    setMeta: async (key: string, value: string) => {
      this.w('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
        key,
        value,
      );
    },
  };

  private findEntitiesOn<S>(
    prep: (sql: string) => Stmt,
    kind: EntityKind,
    by: { team?: string; parent?: string },
  ): Entity<S>[] {
    const rows =
      by.team !== undefined && by.parent !== undefined
        ? prep(
            'SELECT kind, id, team, parent, state FROM entities WHERE kind = ? AND team = ? AND parent = ? ORDER BY ord',
          ).all(kind, by.team, by.parent)
        : by.parent !== undefined
          ? prep('SELECT kind, id, team, parent, state FROM entities WHERE kind = ? AND parent = ? ORDER BY ord').all(
              kind,
              by.parent,
            )
          : by.team !== undefined
            ? prep('SELECT kind, id, team, parent, state FROM entities WHERE kind = ? AND team = ? ORDER BY ord').all(
                kind,
                by.team,
              )
            : prep('SELECT kind, id, team, parent, state FROM entities WHERE kind = ? ORDER BY ord').all(kind);
    return rows.map((row) => toEntity<S>(row) as Entity<S>);
  }

  private metaOn(prep: (sql: string) => Stmt, key: string): string | undefined {
    const row = prep('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
    return row?.value;
  }

  async getEntity<S>(kind: EntityKind, id: string): Promise<Entity<S> | undefined> {
    return this.read(() =>
      toEntity<S>(this.r('SELECT kind, id, team, parent, state FROM entities WHERE kind = ? AND id = ?').get(kind, id)),
    );
  }

  async findEntities<S>(kind: EntityKind, by: { team?: string; parent?: string }): Promise<Entity<S>[]> {
    return this.read(() => this.findEntitiesOn<S>((sql) => this.r(sql), kind, by));
  }

  async getRecord(kind: RecordKind, id: string): Promise<StoredRecord | undefined> {
    return this.read(() =>
      toStored(
        this.r('SELECT seq, kind, id, team, version, json, removed FROM records WHERE kind = ? AND id = ?').get(
          kind,
          id,
        ),
      ),
    );
  }

  async getRecords(kind: RecordKind, ids: readonly string[]): Promise<StoredRecord[]> {
    return this.read(() => {
      const stmt = this.r(
        'SELECT seq, kind, id, team, version, json, removed FROM records WHERE kind = ? AND id = ? AND removed IS NULL',
      );
      const out: StoredRecord[] = [];
      for (const id of ids) {
        const rec = toStored(stmt.get(kind, id));
        if (rec) out.push(rec);
      }
      return out;
    });
  }

  async listRecords(q: ListQuery): Promise<PageRow[]> {
    return this.read(() => {
      if (q.filter) {
        const col = FILTER_COLUMNS[q.filter.by];
        return this.r(
          `SELECT seq, json FROM records WHERE team = ? AND kind = ? AND ${col} = ? AND removed IS NULL AND seq > ?
           ORDER BY seq LIMIT ?`,
        ).all(q.team, q.kind, q.filter.value, q.after, q.limit) as unknown as PageRow[];
      }
      return this.r(
        'SELECT seq, json FROM records WHERE team = ? AND kind = ? AND removed IS NULL AND seq > ? ORDER BY seq LIMIT ?',
      ).all(q.team, q.kind, q.after, q.limit) as unknown as PageRow[];
    });
  }

  async listPage(q: ListQuery): Promise<JsonPage> {
    const row = this.read(() =>
      this.r(LIST_PAGE_SQL[q.filter ? q.filter.by : 'none']).get({
        team: q.team,
        kind: q.kind,
        after: q.after,
        limit: q.limit,
        ...(q.filter ? { value: q.filter.value } : {}),
      }),
    ) as { items: Buffer | null; n: number; last_seq: number | null; last_id: string | null; more: number };
    return {
      items: row.items ?? EMPTY,
      count: row.n,
      hasMore: row.more === 1,
      last: row.last_seq === null ? null : { seq: row.last_seq, id: row.last_id as string },
    };
  }

  async leadDetail(id: string): Promise<LeadDetailRow | undefined> {
    return this.read(() => this.r(LEAD_DETAIL_SQL).get(id)) as LeadDetailRow | undefined;
  }

  async searchLeads(q: SearchQuery): Promise<PageRow[]> {
    return this.read(
      () =>
        this.r(
          `SELECT seq, json FROM records WHERE team = ? AND kind = 'lead' AND removed IS NULL AND seq > ?
           AND (email = ? OR phone = ?) ORDER BY seq LIMIT ?`,
        ).all(q.team, q.after, q.email ?? null, q.phone ?? null, q.limit) as unknown as PageRow[],
    );
  }

  async readFeed(team: string, after: number, limit: number): Promise<FeedRow[]> {
    // An entry without a body of its own is its record's current version: the body is the row's JSON.
    const rows = this.read(() =>
      this.r(
        // The page is cut first, then each entry without a body of its own takes its record's JSON (one
        // lookup per entry, never a join over the team's whole feed).
        `SELECT f.team AS team, f.pos AS pos, f.kind AS kind, f.id AS id, f.version AS version,
           f.recorded_at AS recorded_at, f.removed AS removed,
           CASE WHEN f.body IS NOT NULL THEN f.body
             WHEN f.removed IS NULL THEN (SELECT r.json FROM records r WHERE r.kind = f.kind AND r.id = f.id) END AS body
         FROM (SELECT * FROM feed WHERE team = ? AND pos > ? ORDER BY pos LIMIT ?) f
         ORDER BY f.pos`,
      ).all(team, after, limit),
    );
    return rows.map((row) => ({
      team: row.team as string,
      pos: row.pos as number,
      kind: row.kind as FeedKind,
      id: row.id as string,
      version: row.version as number,
      recordedAt: row.recorded_at as number,
      body: row.body as string | null,
      removed: row.removed as RemovalReason | null,
    }));
  }

  async feedHead(team: string): Promise<number> {
    const row = this.read(() => this.r('SELECT last_pos FROM feed_heads WHERE team = ?').get(team)) as
      | { last_pos: number }
      | undefined;
    return row?.last_pos ?? 0;
  }

  async trimFeed(removalsBefore: number, supersededBefore: number, options: TrimOptions = {}): Promise<number> {
    // Batches, each its own write transaction, with a turn of the event loop between them: better-sqlite3
    // blocks the loop while a statement runs, so one statement over the whole feed would stall every request.
    const size = options.batchSize ?? TRIM_BATCH_ROWS;
    let dropped = 0;
    const batch = async (rule: TrimBatch['rule'], work: () => { examined: number; deleted: number }) => {
      const done = await this.write(async () => work());
      dropped += done.deleted;
      options.onBatch?.({ rule, ...done });
      await new Promise((resolve) => setImmediate(resolve));
      return done.examined === size && !options.signal?.aborted;
    };
    // Expired removals, oldest first, through the partial index feed_removals: every row a batch selects is
    // deleted, so the next batch starts where this one ended.
    const removals = this.w(
      `DELETE FROM feed WHERE rowid IN (
         SELECT rowid FROM feed WHERE removed IS NOT NULL AND recorded_at < ? ORDER BY recorded_at LIMIT ?)`,
    );
    while (
      await batch('removals', () => {
        const deleted = removals.run(removalsBefore, size).changes;
        return { examined: deleted, deleted };
      })
    );
    if (options.signal?.aborted) return dropped;
    // Superseded entries: a window of `size` rows in rowid order, each checked against the newer entries
    // of its record (index feed_record). Survivors are not looked at again in this run.
    const window = this.w(
      'SELECT max(rowid) AS last, count(*) AS n FROM (SELECT rowid FROM feed WHERE rowid > ? ORDER BY rowid LIMIT ?)',
    );
    const superseded = this.w(
      `DELETE FROM feed WHERE rowid > ? AND rowid <= ? AND removed IS NULL AND EXISTS (
         SELECT 1 FROM feed newer WHERE newer.kind = feed.kind AND newer.id = feed.id
         AND newer.pos > feed.pos AND newer.team = feed.team AND newer.recorded_at < ?)`,
    );
    let after = 0;
    while (
      await batch('superseded', () => {
        const { last, n } = window.get(after, size) as { last: number | null; n: number };
        if (last === null) return { examined: 0, deleted: 0 };
        const deleted = superseded.run(after, last, supersededBefore).changes;
        after = last;
        return { examined: n, deleted };
      })
    );
    return dropped;
  }

  async erasedRecords(): Promise<ErasedRecord[]> {
    return this.read(
      () =>
        this.r(
          `SELECT kind, id, team, updated_at AS erasedAt FROM records WHERE removed = 'erased' ORDER BY updated_at, kind, id`,
        ).all() as unknown as ErasedRecord[],
    );
  }

  /**
   * A consistent copy of the database in `destination` (a new file) while other connections and
   * processes keep reading and writing: `VACUUM INTO` from the read connection runs inside one read
   * transaction, so writes meanwhile neither restart it nor (in WAL mode) wait for it. Not
   * better-sqlite3's `backup()`: its native Backup object can be collected after the environment
   * is gone on Node 24, which aborts the process.
   */
  async backup(destination: string): Promise<void> {
    this.r('VACUUM INTO ?').run(destination);
  }

  async getMeta(key: string): Promise<string | undefined> {
    return this.read(() => this.metaOn((sql) => this.r(sql), key));
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.write((tx) => tx.setMeta(key, value));
  }

  async appendAudit(entry: AuditEntry): Promise<void> {
    await this.write(async () => {
      this.w('INSERT INTO audit (at, actor, action, target, outcome, details) VALUES (?, ?, ?, ?, ?, ?)').run(
        ...auditColumns(entry),
      );
    });
  }

  async listAudit(query: AuditQuery): Promise<AuditEntry[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const when = (condition: string, ...values: unknown[]) => {
      where.push(condition);
      params.push(...values);
    };
    if (query.since !== undefined) when('at >= ?', query.since);
    if (query.until !== undefined) when('at < ?', query.until);
    const { action, target } = query;
    if (action !== undefined)
      when("(action = ? OR substr(action, 1, length(?) + 1) = ? || '.')", action, action, action);
    if (query.actor !== undefined) when('actor = ?', query.actor);
    if (target !== undefined) when("instr(',' || target || ',', ',' || ? || ',') > 0", target);
    const found = this.r(
      `SELECT at, actor, action, target, outcome, details FROM audit
       ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`,
    ).all(...params, query.limit) as Row[];
    return found.reverse().map(toAuditEntry);
  }

  async ping(): Promise<void> {
    this.read(() => this.r('SELECT 1').get());
  }

  async pendingMigrations(): Promise<string[]> {
    // Reads the file (SELECT 1 would not), so a database that became unreadable fails here. Cached
    // statements: readiness asks this every few seconds.
    const table = this.r("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kysely_migration'").get();
    if (!table) return Object.keys(SQLITE_MIGRATIONS);
    const rows = this.r('SELECT name FROM kysely_migration').all() as { name: string }[];
    const applied = new Set(rows.map((row) => row.name));
    return Object.keys(SQLITE_MIGRATIONS).filter((name) => !applied.has(name));
  }

  async feedHeadTimes(): Promise<{ team: string; recordedAt: number }[]> {
    const rows = this.r(
      'SELECT h.team AS team, f.recorded_at AS recorded_at FROM feed_heads h JOIN feed f ON f.team = h.team AND f.pos = h.last_pos',
    ).all() as { team: string; recorded_at: number }[];
    return rows.map((row) => ({ team: row.team, recordedAt: Number(row.recorded_at) }));
  }

  async close(): Promise<void> {
    await this.queue;
    this.reader?.close();
    this.writer.close();
    if (this.temporary) {
      for (const suffix of ['', '-wal', '-shm']) rmSync(this.path + suffix, { force: true });
    }
  }
}

function toEntity<S>(row: Row | undefined): Entity<S> | undefined {
  if (!row) return undefined;
  return {
    kind: row.kind as EntityKind,
    id: row.id as string,
    team: row.team as string | null,
    parent: row.parent as string | null,
    state: JSON.parse(row.state as string) as S,
  };
}

function toStored(row: Row | undefined): StoredRecord | undefined {
  if (!row) return undefined;
  return {
    kind: row.kind as RecordKind,
    id: row.id as string,
    team: row.team as string,
    seq: row.seq as number,
    version: row.version as number,
    json: row.json as string | null,
    removed: row.removed as RemovalReason | null,
  };
}
