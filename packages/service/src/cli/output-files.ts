import { isSqliteDatabaseFile } from '@crm-export/client/sqlite-files';
import { AdminError } from '../errors/admin-error.js';

// A file an admin command writes (a backup, an erasures export) is never the SQLite database the service
// runs on, nor a file SQLite keeps beside it: replacing or truncating one while processes have it open
// loses their writes (they go on writing into an unlinked file) and can corrupt the database.

/**
 * Refuses (`invalid_argument`) to write `paths` (what the command creates, replaces or deletes for the
 * argument `given`, e.g. `--to backup.db`) when one of them is the database of `dbUrl` or one of its
 * `-wal`, `-shm`, `-journal` files, by whatever path or link reaches it. PostgreSQL and `:memory:` have none.
 */
export function checkOutputFiles(dbUrl: string, given: string, paths: readonly string[]): void {
  if (!dbUrl.startsWith('sqlite:')) return;
  const db = dbUrl.slice('sqlite:'.length);
  if (db === '' || db === ':memory:') return;
  for (const path of paths) {
    if (isSqliteDatabaseFile(db, path))
      throw new AdminError(
        'invalid_argument',
        `${given} is the database ${dbUrl} or a file SQLite keeps beside it: write it elsewhere (nothing was changed)`,
      );
  }
}
