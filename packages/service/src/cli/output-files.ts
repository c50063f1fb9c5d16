import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { AdminError } from '../errors/admin-error.js';

// A file an admin command writes (a backup, an erasures export) is never the SQLite database the service
// runs on, nor a file SQLite keeps beside it: replacing or truncating one while processes have it open
// loses their writes (they go on writing into an unlinked file) and can corrupt the database.

/** The database file and the files SQLite keeps beside it. */
const DATABASE_FILES = ['', '-wal', '-shm', '-journal'];

/** `path` with every symbolic link resolved as far as it exists; a file still to be created keeps its name. */
function realPath(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(realPath(parent), basename(path));
  }
}

/** Device and inode of the file `path` names (through symbolic links), or undefined when there is none. */
function fileIdentity(path: string): string | undefined {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

/**
 * The database files of a `sqlite:` URL, each by the path it is opened by and by its real path (SQLite
 * keeps `-wal` and `-shm` beside the file a symbolic link points to). None for PostgreSQL or `:memory:`.
 */
function databaseFiles(dbUrl: string): string[] {
  if (!dbUrl.startsWith('sqlite:')) return [];
  const db = dbUrl.slice('sqlite:'.length);
  if (db === '' || db === ':memory:') return [];
  const bases = [resolve(db), realPath(resolve(db))];
  return [...new Set(bases.flatMap((base) => DATABASE_FILES.map((suffix) => base + suffix)))];
}

/**
 * Refuses (`invalid_argument`) to write `paths` (what the command creates, replaces or deletes for the
 * argument `given`, e.g. `--to backup.db`) when one of them is the database of `dbUrl` or one of its
 * `-wal`, `-shm`, `-journal` files: by the path with symbolic links resolved (another spelling, a linked
 * folder) and by device and inode (a hard link).
 */
export function checkOutputFiles(dbUrl: string, given: string, paths: readonly string[]): void {
  const live = databaseFiles(dbUrl);
  if (live.length === 0) return;
  const livePaths = new Set(live.map(realPath));
  const liveIds = new Set(live.map(fileIdentity).filter((id) => id !== undefined));
  for (const path of paths) {
    const id = fileIdentity(path);
    if (livePaths.has(realPath(path)) || (id !== undefined && liveIds.has(id)))
      throw new AdminError(
        'invalid_argument',
        `${given} is the database ${dbUrl} or a file SQLite keeps beside it: write it elsewhere (nothing was changed)`,
      );
  }
}
