import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { adminQuery } from '../support/postgres.js';
import { openSqliteFile } from '../support/sqlite-file.js';

// A real database error on demand: a trigger in the test store's own database that raises when an
// entity with the given id is written, so the failure comes from the database, not from a fake store.

export async function installFailingTrigger(store: Store, id: string): Promise<void> {
  if (store instanceof SqliteStore) {
    const db = openSqliteFile(store.path);
    db.exec(
      `CREATE TRIGGER boom BEFORE INSERT ON entities WHEN NEW.id = '${id}'
       BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END`,
    );
    db.close();
    return;
  }
  if (store instanceof PostgresStore) {
    const s = store.schema;
    await adminQuery(
      process.env.PG_URL as string,
      `CREATE FUNCTION ${s}.boom() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.id = '${id}' THEN RAISE EXCEPTION 'refused by a test trigger'; END IF; RETURN NEW; END $$;
       CREATE TRIGGER boom BEFORE INSERT ON ${s}.entities FOR EACH ROW EXECUTE FUNCTION ${s}.boom();`,
    );
    return;
  }
  throw new Error('unknown store backend');
}
