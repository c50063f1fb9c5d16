import Database from 'better-sqlite3';
import type { Row } from '../sql/rows.js';

// The SQLite store's two connections: one writer (SQLite has one writer at a time) and one reader, each
// with the statements prepared on it, once per text.

export type Stmt = Database.Statement<unknown[], Row>;

/**
 * better-sqlite3 12 aborts the process on Node 24 when a Database or Statement is garbage-collected
 * outside a Node context (upstream WiseLibs/better-sqlite3#1515; v13 fixes it but needs Node 22).
 * Handles are therefore kept referenced for the life of the process, closed but never collected.
 * A server opens one store, so this only adds up in test runs that open hundreds.
 */
const retainedHandles = new Set<unknown>();
export function retain<T>(handle: T): T {
  retainedHandles.add(handle);
  return handle;
}

/** One connection and its prepared statements, each text prepared once and kept (see `retain`). */
export class SqliteConnection {
  private readonly statements = new Map<string, Stmt>();

  private constructor(readonly db: Database.Database) {
    retain(db);
  }

  /** The writer: WAL, erased rows zeroed, a large page cache, the WAL cut back after checkpoints. */
  static writer(path: string): SqliteConnection {
    const db = new Database(path);
    // A new file gets 8 KiB pages (the default is 4 KiB), as PostgreSQL's: a page holds more rows of 0.5 to
    // 1.5 KB, so less of it is left unused. 3 to 5 % fewer bytes per demo lead (docs/performance.md, "Disk").
    // Set before WAL is: a file's page size is fixed when it is created, so an existing file keeps its own.
    db.exec('PRAGMA page_size = 8192');
    db.exec(
      'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON',
    );
    // Deleted and overwritten rows are zeroed, not left in free space: erased data is not recoverable from
    // the file (docs/write-side.md, "Erasure and storage").
    db.exec('PRAGMA secure_delete = ON');
    // 64 MiB of pages for the writer (the default is 2 MiB): every write walks the records, entities
    // and feed indexes, and at millions of rows each miss is a read from the file.
    db.exec('PRAGMA cache_size = -65536');
    // The WAL file keeps the size of the largest transaction it ever held unless told otherwise: after
    // a checkpoint it is cut back to 4 MiB (about what an automatic checkpoint lets it reach).
    db.exec('PRAGMA journal_size_limit = 4194304');
    return new SqliteConnection(db);
  }

  /** The reader of a file the writer created, mapping `mmapBytes` of it into memory. */
  static reader(path: string, mmapBytes: number): SqliteConnection {
    const db = new Database(path, { readonly: true, fileMustExist: true });
    db.exec('PRAGMA busy_timeout = 5000; PRAGMA secure_delete = ON');
    // Reads of mapped pages cost no system call and no copy: an uncached list page reads many pages of
    // the file, and through the file each is a `pread` (docs/performance.md).
    // The mapped pages are the operating system's cache of the file, so they add no memory of their
    // own, but they count in the process's RSS (file-backed). The writer keeps reading through its cache.
    db.exec(`PRAGMA mmap_size = ${mmapBytes}`);
    return new SqliteConnection(db);
  }

  /** The statement of this text on this connection, prepared on first use. */
  prepared(sql: string): Stmt {
    let s = this.statements.get(sql);
    if (!s) {
      s = retain(this.db.prepare(sql)) as Stmt;
      this.statements.set(sql, s);
    }
    return s;
  }

  close(): void {
    this.db.close();
  }
}
