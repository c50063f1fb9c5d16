import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

// Whether a file a command is about to write is a SQLite database or one of the files SQLite keeps beside
// it. Replacing or truncating one while a process has it open loses that process's writes (it goes on
// writing into an unlinked file). Used by both commands: `mirror export --out` (the mirror) and the
// service's admin commands that write files (its database).

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
 * Whether `candidate` is the SQLite database at `database` or its `-wal`, `-shm` or `-journal` file: by the
 * path with symbolic links resolved (another spelling, a linked folder; SQLite keeps `-wal` and `-shm` beside
 * the file a link points to) and by device and inode (a hard link).
 */
export function isSqliteDatabaseFile(database: string, candidate: string): boolean {
  const bases = [resolve(database), realPath(resolve(database))];
  const files = bases.flatMap((base) => DATABASE_FILES.map((suffix) => base + suffix));
  if (files.some((file) => realPath(file) === realPath(resolve(candidate)))) return true;
  const id = fileIdentity(candidate);
  return id !== undefined && files.some((file) => fileIdentity(file) === id);
}
