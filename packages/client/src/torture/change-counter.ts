// Counts the changes a consumer makes under its state directory (files created, written, renamed,
// removed), for the torture kit's kills in the middle of a page (consumer-run.ts).
import { type FSWatcher, readdirSync, statSync, watch } from 'node:fs';
import { join } from 'node:path';

/** A state directory with more directories than this is watched in part. */
const MAX_WATCHED_DIRS = 1000;

/**
 * One native watcher per directory, new directories picked up as they appear. Node's recursive watch on
 * Linux is built in JavaScript: it saw half the changes of a page here and counted the last ones 100 ms
 * after the consumer had finished, while one native watcher per directory counts each change as it happens.
 */
export class ChangeCounter {
  /** Changes seen since the counter started. */
  count = 0;
  private readonly watchers = new Map<string, FSWatcher>();
  private closed = false;

  constructor(
    root: string,
    private readonly onChange: () => void,
  ) {
    this.watchTree(root);
  }

  close(): void {
    this.closed = true;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  private watchTree(dir: string): void {
    if (this.closed || this.watchers.has(dir) || this.watchers.size >= MAX_WATCHED_DIRS) return;
    try {
      const w = watch(dir, (event, name) => {
        this.count++;
        this.onChange();
        if (event === 'rename' && name) this.watchIfDir(join(dir, name.toString()));
      });
      w.on('error', () => {
        w.close();
        this.watchers.delete(dir);
      });
      this.watchers.set(dir, w);
      for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) this.watchTree(join(dir, e.name));
    } catch {
      // Gone already, or no watcher on this platform: the consumer seems to write less, and the waits kill it.
    }
  }

  private watchIfDir(path: string): void {
    if (this.watchers.has(path)) return;
    try {
      if (statSync(path).isDirectory()) this.watchTree(path);
    } catch {
      // Renamed away or removed: nothing to watch.
    }
  }
}
