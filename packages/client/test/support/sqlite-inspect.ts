import Database from 'better-sqlite3';

// Tests read the service's and the mirror's SQLite files directly. better-sqlite3 12 aborts Node 24
// when one of its objects is garbage-collected (docs/runtime.md), so every handle opened here is kept
// referenced for the rest of the test process.

const retained: unknown[] = [];

/** A read-only connection whose handles (the connection and every statement) are never collected. */
export function inspectDatabase(path: string): Pick<Database.Database, 'prepare' | 'close'> {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  retained.push(db);
  return {
    prepare: ((sql: string) => {
      const statement = db.prepare(sql);
      retained.push(statement);
      return statement;
    }) as Database.Database['prepare'],
    close: () => db.close(),
  };
}
