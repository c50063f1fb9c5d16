import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, type MigrationProvider, Migrator, SqliteDialect } from 'kysely';
import { base62 } from '../../ids.js';
import type { FeedKind, RecordKind, RemovalReason } from '../../schemas/enums.js';
import type {
  Entity,
  EntityKind,
  FeedEntry,
  FeedRow,
  ListQuery,
  PageRow,
  RecordRow,
  SearchQuery,
  Store,
  StoredRecord,
  WriteTx,
} from '../store.js';
import { SQLITE_MIGRATIONS } from './migrations.js';

export interface SqliteStoreOptions {
  /** A file path, or `:memory:` for a throw-away database (a temp file, so readers can share it). */
  path: string;
}

type Row = Record<string, unknown>;
type Stmt = Database.Statement<unknown[], Row>;

const FILTER_COLUMNS = { board: 'board', stage: 'stage', status: 'status', lead: 'lead' } as const;

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

  constructor(options: SqliteStoreOptions) {
    this.temporary = options.path === ':memory:';
    this.path = this.temporary ? join(tmpdir(), `crm-export-${process.pid}-${base62(10)}.db`) : options.path;
    mkdirSync(dirname(this.path), { recursive: true });
    this.writer = retain(new Database(this.path));
    this.writer.exec(
      'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON',
    );
    // 64 MiB of pages for the writer (the default is 2 MiB): every write walks the records, entities
    // and feed indexes, and at millions of rows each miss is a read from the file.
    this.writer.exec('PRAGMA cache_size = -65536');
  }

  async migrate(): Promise<void> {
    // Kysely prepares a statement per query; route them through `retain` (see above).
    const writer = this.writer;
    const database = { close: () => undefined, prepare: (sql: string) => retain(writer.prepare(sql)) };
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) });
    const provider: MigrationProvider = { getMigrations: async () => SQLITE_MIGRATIONS };
    const { error } = await new Migrator({ db, provider }).migrateToLatest();
    // Not db.destroy(): that would close the shared writer connection.
    if (error) throw error;
  }

  private readDb(): Database.Database {
    if (!this.reader) {
      this.reader = retain(new Database(this.path, { readonly: true, fileMustExist: true }));
      this.reader.exec('PRAGMA busy_timeout = 5000');
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
      this.writer.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.tx);
        this.writer.exec('COMMIT');
        return result;
      } catch (err) {
        if (this.writer.inTransaction) this.writer.exec('ROLLBACK');
        throw err;
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  private readonly tx: WriteTx = {
    getEntity: async <S>(kind: EntityKind, id: string) =>
      toEntity<S>(this.w('SELECT kind, id, team, parent, state FROM entities WHERE kind = ? AND id = ?').get(kind, id)),
    findEntities: async <S>(kind: EntityKind, by: { team?: string; parent?: string }) =>
      this.findEntitiesOn<S>((sql) => this.w(sql), kind, by),
    putEntity: async <S>(e: Entity<S>) => {
      this.w(
        `INSERT INTO entities (kind, id, team, parent, state) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (kind, id) DO UPDATE SET team = excluded.team, parent = excluded.parent, state = excluded.state`,
      ).run(e.kind, e.id, e.team, e.parent, JSON.stringify(e.state));
    },
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
      this.w(
        `INSERT INTO records (kind, id, team, lead, board, stage, status, email, phone, version, updated_at, json, removed)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
         ON CONFLICT (kind, id) DO UPDATE SET team = excluded.team, lead = excluded.lead, board = excluded.board,
           stage = excluded.stage, status = excluded.status, email = excluded.email, phone = excluded.phone,
           version = excluded.version, updated_at = excluded.updated_at, json = excluded.json, removed = NULL`,
      ).run(r.kind, r.id, r.team, r.lead, r.board, r.stage, r.status, r.email, r.phone, r.version, r.updatedAt, r.json);
    },
    removeRecord: async (kind: RecordKind, id: string, reason: RemovalReason, version: number, at: string) => {
      this.w(
        `UPDATE records SET removed = ?, version = ?, updated_at = ?, json = NULL, email = NULL, phone = NULL
         WHERE kind = ? AND id = ?`,
      ).run(reason, version, at, kind, id);
    },
    appendFeed: async (e: FeedEntry) => {
      const head = this.w(
        `INSERT INTO feed_heads (team, last_pos) VALUES (?, 1)
         ON CONFLICT (team) DO UPDATE SET last_pos = last_pos + 1 RETURNING last_pos`,
      ).get(e.team) as { last_pos: number };
      this.w(
        'INSERT INTO feed (team, pos, kind, id, version, recorded_at, body, removed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ).run(e.team, head.last_pos, e.kind, e.id, e.version, e.recordedAt, e.body, e.removed);
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
    return toEntity<S>(
      this.r('SELECT kind, id, team, parent, state FROM entities WHERE kind = ? AND id = ?').get(kind, id),
    );
  }

  async findEntities<S>(kind: EntityKind, by: { team?: string; parent?: string }): Promise<Entity<S>[]> {
    return this.findEntitiesOn<S>((sql) => this.r(sql), kind, by);
  }

  async getRecord(kind: RecordKind, id: string): Promise<StoredRecord | undefined> {
    return toStored(
      this.r('SELECT seq, kind, id, team, version, json, removed FROM records WHERE kind = ? AND id = ?').get(kind, id),
    );
  }

  async getRecords(kind: RecordKind, ids: readonly string[]): Promise<StoredRecord[]> {
    const stmt = this.r(
      'SELECT seq, kind, id, team, version, json, removed FROM records WHERE kind = ? AND id = ? AND removed IS NULL',
    );
    const out: StoredRecord[] = [];
    for (const id of ids) {
      const rec = toStored(stmt.get(kind, id));
      if (rec) out.push(rec);
    }
    return out;
  }

  async listRecords(q: ListQuery): Promise<PageRow[]> {
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
  }

  async searchLeads(q: SearchQuery): Promise<PageRow[]> {
    return this.r(
      `SELECT seq, json FROM records WHERE team = ? AND kind = 'lead' AND removed IS NULL AND seq > ?
       AND (email = ? OR phone = ?) ORDER BY seq LIMIT ?`,
    ).all(q.team, q.after, q.email ?? null, q.phone ?? null, q.limit) as unknown as PageRow[];
  }

  async readFeed(team: string, after: number, limit: number): Promise<FeedRow[]> {
    const rows = this.r(
      `SELECT team, pos, kind, id, version, recorded_at, body, removed FROM feed
       WHERE team = ? AND pos > ? ORDER BY pos LIMIT ?`,
    ).all(team, after, limit);
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
    const row = this.r('SELECT last_pos FROM feed_heads WHERE team = ?').get(team) as { last_pos: number } | undefined;
    return row?.last_pos ?? 0;
  }

  async trimFeed(removalsBefore: number, supersededBefore: number): Promise<number> {
    return this.write(async () => {
      const a = this.w('DELETE FROM feed WHERE removed IS NOT NULL AND recorded_at < ?').run(removalsBefore).changes;
      const b = this.w(
        `DELETE FROM feed WHERE removed IS NULL AND EXISTS (
           SELECT 1 FROM feed newer WHERE newer.kind = feed.kind AND newer.id = feed.id
           AND newer.pos > feed.pos AND newer.team = feed.team AND newer.recorded_at < ?)`,
      ).run(supersededBefore).changes;
      return a + b;
    });
  }

  async getMeta(key: string): Promise<string | undefined> {
    return this.metaOn((sql) => this.r(sql), key);
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.write((tx) => tx.setMeta(key, value));
  }

  async ping(): Promise<void> {
    this.r('SELECT 1').get();
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
