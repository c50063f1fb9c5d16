// `mirror export --out FILE` truncates FILE: it must never be the SQLite mirror it reads, nor a file SQLite
// keeps beside it, or the copy a consumer synced is gone (and a sync still running writes into a broken
// file). Compared by the path with symbolic links resolved and by device and inode (a hard link).
import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { parseInto } from './open-mirror.js';

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

function fileIdentity(path: string): string | undefined {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

/** Whether `out` is the SQLite mirror `into` names, or its `-wal`, `-shm` or `-journal` file. */
export function isMirrorFile(into: string, out: string): boolean {
  const { dialect, target } = parseInto(into);
  if (dialect !== 'sqlite' || target === ':memory:') return false;
  const bases = [resolve(target), realPath(resolve(target))];
  const files = bases.flatMap((base) => DATABASE_FILES.map((suffix) => base + suffix));
  const id = fileIdentity(out);
  return (
    files.some((file) => realPath(file) === realPath(resolve(out))) ||
    (id !== undefined && files.some((file) => fileIdentity(file) === id))
  );
}
