import Database from 'better-sqlite3';

// Some tests open the service's SQLite file directly. better-sqlite3 12 aborts Node 24 when one of its
// objects is garbage-collected (docs/runtime.md), so every handle opened here stays referenced for the
// rest of the test process: the connection and each statement it prepares.

const retained: unknown[] = [];

export interface SqliteFile {
  prepare(sql: string): Database.Statement;
  exec(sql: string): void;
  close(): void;
}

export function openSqliteFile(path: string, options: Database.Options = {}): SqliteFile {
  const db = new Database(path, options);
  retained.push(db);
  return {
    prepare: (sql) => {
      const statement = db.prepare(sql);
      retained.push(statement);
      return statement;
    },
    exec: (sql) => void db.exec(sql),
    close: () => void db.close(),
  };
}
