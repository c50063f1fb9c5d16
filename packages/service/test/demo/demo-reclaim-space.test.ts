import { existsSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runDemo } from '../../src/demo/run-demo.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { describeEachBackend } from '../support/backends.js';

// The demo of a new database rewrites its tables compactly at the end (Store.reclaimSpace); a demo added
// to a database that already has a feed leaves it alone, since something may be serving it.

const NOW = Date.parse('2026-03-01T00:00:00.000Z');

describeEachBackend('demo space', (makeStore) => {
  it('a demo into a new database reclaims its space once; a demo into a database with a feed does not', async () => {
    const store = await makeStore();
    try {
      const reclaim = store.reclaimSpace?.bind(store);
      expect(reclaim).toBeDefined();
      let calls = 0;
      store.reclaimSpace = async () => {
        calls++;
        await reclaim?.();
      };
      const first = await runDemo(store, { seed: 7, teams: 1, leads: 10, now: NOW });
      expect(calls).toBe(1);
      const feed = await store.readFeed(first.teams[0]!, 0, 1000);
      expect(feed.length).toBeGreaterThan(0);
      await runDemo(store, { seed: 8, teams: 1, leads: 10, now: NOW });
      expect(calls).toBe(1);
      expect(await store.readFeed(first.teams[0]!, 0, 1000)).toEqual(feed);
    } finally {
      await store.close();
    }
  });
});

it('after the demo of a new SQLite database the file is smaller than without the rewrite and the WAL is empty', async () => {
  const sizes: number[] = [];
  for (const reclaimSpace of [false, true]) {
    const path = join(tmpdir(), `demo-space-${process.pid}-${Math.random().toString(36).slice(2)}.db`);
    const store = new SqliteStore({ path });
    try {
      await store.migrate();
      await runDemo(store, { seed: 7, teams: 1, leads: 40, now: NOW, batchSize: 100, reclaimSpace });
      if (reclaimSpace) expect(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0).toBe(0);
      await store.close();
      sizes.push(statSync(path).size);
    } finally {
      await store.close();
      for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
    }
  }
  expect(sizes[1]).toBeLessThan(sizes[0]!);
});
