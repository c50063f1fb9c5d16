import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, type MigrationProvider, Migrator, SqliteDialect } from 'kysely';
import { base62 } from '../../ids.js';
import type { FeedKind, RecordKind, RemovalReason } from '../../schemas/enums.js';
import { SQLITE_DEFAULTS } from '../backend-defaults.js';
import { DatabaseMissingError } from '../database-missing-error.js';
import { borrowBodies } from '../sql/borrow-bodies.js';
import { SQLITE } from '../sql/dialect.js';
import { auditColumns, type Row, toEntity, toStored } from '../sql/rows.js';
import { SqlStore } from '../sql/sql-store.js';
import {
  entityLookup,
  entityLookupValues,
  entityValues,
  FEED_COLUMNS,
  RECORD_COLUMNS,
  valuesOf,
} from '../sql/statements.js';
import type { RunBatch } from '../sql/trim.js';
import type { Store, WriteTx } from '../store.js';
import type { AuditEntry, Entity, EntityKind, FeedEntry, RecordRow, WriteSet } from '../types.js';
import { toStoreError } from '../unavailable.js';

export interface SqliteStoreOptions {
  /** A file path, or `:memory:` for a throw-away database (a temp file, so readers can share it). */
  path: string;
  /** Refuse a file that does not exist instead of creating it (and its folder). */
  mustExist?: boolean;
  /** MiB of the file the reader maps into memory; 0 reads through the file (default `SQLITE_DEFAULTS`). */
  readerMmapMib?: number;
}

type Stmt = Database.Statement<unknown[], Row>;

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
export class SqliteStore extends SqlStore implements Store {
  declare readonly backend: 'sqlite';
  readonly path: string;
  private readonly temporary: boolean;
  private readonly writer: Database.Database;
  private reader: Database.Database | undefined;
  private readonly readerMmapBytes: number;
  private readonly writerStmts = new Map<string, Stmt>();
  private readonly readerStmts = new Map<string, Stmt>();
  private queue: Promise<unknown> = Promise.resolve();
  /** Set when a transaction erased a record: its old versions may still be in WAL frames until a checkpoint. */
  private scrubWal = false;
  /** Feed heads read since the database last changed (`heads.version`, the reader's `data_version`). */
  private heads = { version: -1, byTeam: new Map<string, number>() };

  constructor(options: SqliteStoreOptions) {
    super(SQLITE);
    this.temporary = options.path === ':memory:';
    this.readerMmapBytes = (options.readerMmapMib ?? SQLITE_DEFAULTS.readerMmapMib) * 1024 * 1024;
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
    const provider: MigrationProvider = { getMigrations: async () => this.migrations };
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
      // Reads of mapped pages cost no system call and no copy: an uncached list page reads many pages of
      // the file, and through the file each is a `pread` (docs/performance.md).
      // The mapped pages are the operating system's cache of the file, so they add no memory of their
      // own, but they count in the process's RSS (file-backed). The writer keeps reading through its cache.
      this.reader.exec(`PRAGMA mmap_size = ${this.readerMmapBytes}`);
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

  async reclaimSpace(): Promise<void> {
    const run = this.queue.then(() => {
      try {
        this.writer.exec('VACUUM');
        // VACUUM goes through the WAL: checkpoint it and cut it to nothing, or it stays the size of the file.
        this.w('PRAGMA wal_checkpoint(TRUNCATE)').get();
      } catch (err) {
        throw toStoreError(err);
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * A team's feed head, asked by every list request that may be answered from the page cache. The reader's
   * `data_version` changes whenever another connection (this store's writer, another process) commits, and
   * is cheaper to read than the head: heads are read again only after a change.
   */
  override async feedHead(team: string): Promise<number> {
    let version: number;
    try {
      version = Number(this.r('PRAGMA data_version').get()?.data_version);
    } catch (err) {
      throw toStoreError(err);
    }
    if (version !== this.heads.version) this.heads = { version, byTeam: new Map() };
    let head = this.heads.byTeam.get(team);
    if (head === undefined) {
      head = await super.feedHead(team);
      // Bounded: a process serving very many teams starts over rather than growing.
      if (this.heads.byTeam.size >= 10_000) this.heads.byTeam.clear();
      this.heads.byTeam.set(team, head);
    }
    return head;
  }

  /** A read on the reader connection, its temporary failures turned into `StoreUnavailableError` (unavailable.ts). */
  protected async all(text: string, values: unknown[] = []): Promise<Row[]> {
    try {
      return this.r(text).all(...values);
    } catch (err) {
      throw toStoreError(err);
    }
  }

  /**
   * A retention batch in its own write transaction, with a turn of the event loop after it: better-sqlite3
   * blocks the loop while a statement runs, so one statement over the whole feed would stall every request.
   */
  protected readonly trimBatch: RunBatch = async (work) => {
    const done = await this.write(() =>
      work(async (text, values) => {
        const stmt = this.w(text);
        return stmt.reader
          ? { rows: stmt.all(...values), changes: 0 }
          : { rows: [], changes: stmt.run(...values).changes };
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    return done;
  };

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
    this.w(this.sql.putEntity).run(...entityValues(e));
  }

  private keepSupersededBody(kind: RecordKind, id: string): void {
    this.w(this.sql.keepSupersededBody).run(kind, id, kind, id);
  }

  private putRecordRow(r: RecordRow): void {
    this.w(this.sql.putRecord).run(...valuesOf(RECORD_COLUMNS, r));
  }

  private removeRecordRow(r: WriteSet['removeRecords'][number]): void {
    if (r.reason === 'erased') this.scrubWal = true;
    this.w(this.sql.removeRecord).run(r.reason, r.version, r.at, r.kind, r.id);
  }

  private insertFeedRow(e: WriteSet['appendFeed'][number]): void {
    this.w(this.sql.insertFeed).run(...valuesOf(FEED_COLUMNS, e));
  }

  /** Buffered writes: SQLite runs in this process, so a cached statement per row costs no round trip. */
  private applyWrites(w: WriteSet): void {
    const deleteEntity = this.w(this.sql.deleteEntity);
    for (const e of w.deleteEntities) deleteEntity.run(e.kind, e.id);
    for (const e of w.putEntities) this.putEntityRow(e);
    for (const r of w.supersede) this.keepSupersededBody(r.kind, r.id);
    for (const r of w.putRecords) this.putRecordRow(r);
    for (const r of w.removeRecords) this.removeRecordRow(r);
    const purge = this.w(this.sql.purgeFeed);
    for (const p of w.purgeFeed) purge.run(p.kind, p.id);
    const heads = new Map<string, number>();
    for (const e of borrowBodies(w)) {
      this.insertFeedRow(e);
      heads.set(e.team, Math.max(e.pos, heads.get(e.team) ?? 0));
    }
    const head = this.w(this.sql.raiseFeedHead);
    for (const [team, pos] of heads) head.run(team, pos);
  }

  private readonly tx: WriteTx = {
    getEntity: async <S>(kind: EntityKind, id: string) => toEntity<S>(this.w(this.sql.entity).get(kind, id)),
    findEntities: async <S>(kind: EntityKind, by: { team?: string; parent?: string }) =>
      this.w(this.sql.entities[entityLookup(by)])
        .all(...entityLookupValues(kind, by))
        .map((row) => toEntity<S>(row) as Entity<S>),
    putEntity: async <S>(e: Entity<S>) => this.putEntityRow(e),
    deleteEntity: async (kind: EntityKind, id: string) => {
      this.w(this.sql.deleteEntity).run(kind, id);
    },
    getRecord: async (kind: RecordKind, id: string) => toStored(this.w(this.sql.record).get(kind, id)),
    putRecord: async (r: RecordRow) => {
      this.keepSupersededBody(r.kind, r.id);
      this.putRecordRow(r);
    },
    removeRecord: async (kind: RecordKind, id: string, reason: RemovalReason, version: number, at: string) =>
      this.removeRecordRow({ kind, id, reason, version, at }),
    appendFeed: async (e: FeedEntry) => {
      const head = this.w(this.sql.nextFeedPos).get(e.team) as { last_pos: number };
      this.insertFeedRow({ ...e, pos: head.last_pos });
      return head.last_pos;
    },
    purgeFeed: async (kind: FeedKind, id: string) => {
      this.w(this.sql.purgeFeed).run(kind, id);
    },
    // The writer connection is the only writer: the head read stays true until this transaction ends.
    lockFeedHead: async (team: string) =>
      (this.w(this.sql.feedHead).get(team) as { last_pos: number } | undefined)?.last_pos ?? 0,
    applyWrites: async (writes: WriteSet) => this.applyWrites(writes),
    getMeta: async (key: string) => this.w(this.sql.meta).get(key)?.value as string | undefined,
    setMeta: async (key: string, value: string) => {
      this.w(this.sql.putMeta).run(key, value);
    },
  };

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

  async appendAudit(entry: AuditEntry): Promise<void> {
    await this.write(async () => {
      this.w(this.sql.appendAudit).run(...auditColumns(entry));
    });
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
