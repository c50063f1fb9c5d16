// `mirror export --out FILE` truncates FILE: it must never be the SQLite mirror it reads, nor a file SQLite
// keeps beside it, or the copy a consumer synced is gone (and a sync still running writes into a broken file).
import { isSqliteDatabaseFile } from '../sqlite-files.js';
import { parseInto } from './open-mirror.js';

/** Whether `out` is the SQLite mirror `into` names, or its `-wal`, `-shm` or `-journal` file. */
export function isMirrorFile(into: string, out: string): boolean {
  const { dialect, target } = parseInto(into);
  if (dialect !== 'sqlite' || target === ':memory:') return false;
  return isSqliteDatabaseFile(target, out);
}
