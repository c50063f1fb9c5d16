import Database from 'better-sqlite3';

// Some tests and benchmarks open a SQLite file directly. better-sqlite3 12 aborts Node 24 when one of its
// objects is garbage-collected (docs/runtime.md), so every handle opened here stays referenced for the
// rest of the process: the connection and each statement prepared on it (Kysely's included).

const retained: unknown[] = [];

/** A better-sqlite3 connection whose handles are never collected; closing it still closes the file. */
export function openSqliteFile(path: string, options: Database.Options = {}): Database.Database {
  const db = new Database(path, options);
  retained.push(db);
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    const statement = prepare(sql);
    retained.push(statement);
    return statement;
  }) as Database.Database['prepare'];
  return db;
}
