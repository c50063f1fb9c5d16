import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { base62 } from '../../ids.js';
import { SQLITE_DEFAULTS } from '../backend-defaults.js';
import { DatabaseMissingError } from '../database-missing-error.js';
import { SQLITE } from '../sql/dialect.js';
import { auditColumns, type Row } from '../sql/rows.js';
import { SqlStore } from '../sql/sql-store.js';
import type { RunBatch } from '../sql/trim.js';
import type { Store, WriteTx } from '../store.js';
import type { AuditEntry } from '../types.js';
import { toStoreError } from '../unavailable.js';
import { SqliteConnection } from './sqlite-connection.js';
import { migrateSqlite } from './sqlite-migrator.js';
import { SqliteWriteTx } from './sqlite-write-tx.js';

export interface SqliteStoreOptions {
  /** A file path, or `:memory:` for a throw-away database (a temp file, so readers can share it). */
  path: string;
  /** Refuse a file that does not exist instead of creating it (and its folder). */
  mustExist?: boolean;
  /** MiB of the file the reader maps into memory; 0 reads through the file (default `SQLITE_DEFAULTS`). */
  readerMmapMib?: number;
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
  private readonly writer: SqliteConnection;
  private reader: SqliteConnection | undefined;
  private readonly readerMmapBytes: number;
  private queue: Promise<unknown> = Promise.resolve();
  /** Set when a transaction erased a record: its old versions may still be in WAL frames until a checkpoint. */
  private scrubWal = false;
  /** Feed heads read since the database last changed (`heads.version`, the reader's `data_version`). */
  private heads = { version: -1, byTeam: new Map<string, number>() };
  private readonly tx: SqliteWriteTx;

  constructor(options: SqliteStoreOptions) {
    super(SQLITE);
    this.temporary = options.path === ':memory:';
    this.readerMmapBytes = (options.readerMmapMib ?? SQLITE_DEFAULTS.readerMmapMib) * 1024 * 1024;
    this.path = this.temporary ? join(tmpdir(), `crm-export-${process.pid}-${base62(10)}.db`) : options.path;
    if (options.mustExist && !this.temporary && !existsSync(this.path)) {
      throw new DatabaseMissingError(`no database at ${this.path}`);
    }
    mkdirSync(dirname(this.path), { recursive: true });
    this.writer = SqliteConnection.writer(this.path);
    this.tx = new SqliteWriteTx(
      this.writer,
      this.sql,
      () => {
        this.scrubWal = true;
      },
      this.intakeSql,
    );
  }

  async migrate(): Promise<void> {
    await migrateSqlite(this.writer.db, this.migrations);
  }

  /** A statement of the writer connection. */
  private w(sql: string) {
    return this.writer.prepared(sql);
  }

  /** A statement of the reader connection, opened on first use (the writer creates the file first). */
  private r(sql: string) {
    this.reader ??= SqliteConnection.reader(this.path, this.readerMmapBytes);
    return this.reader.prepared(sql);
  }

  async write<T>(fn: (tx: WriteTx) => Promise<T>): Promise<T> {
    const run = this.queue.then(async () => {
      try {
        this.writer.db.exec('BEGIN IMMEDIATE');
        try {
          const result = await fn(this.tx);
          this.writer.db.exec('COMMIT');
          if (this.scrubWal) this.checkpointAfterErasure();
          return result;
        } catch (err) {
          if (this.writer.db.inTransaction) this.writer.db.exec('ROLLBACK');
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
        this.writer.db.exec('VACUUM');
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
    // A cached, retained statement rather than `pragma()`, which prepares a new one each call (see `retain`, sqlite-connection.ts).
    const result = this.w('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number } | undefined;
    this.scrubWal = (result?.busy ?? 0) !== 0;
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
