import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { FeedEntry } from '../../src/store/store.js';

// The SQLite store answers a team's feed head from memory until the database changes (it reads the reader
// connection's data_version, which moves with every commit of another connection). The page cache is only
// exact if the head is never older than the last commit, by this process or any other.

const dir = mkdtempSync(join(tmpdir(), 'crm-export-feed-head-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TEAM = 'team_H1';
const OTHER = 'team_H2';
const entry = (team: string, id: string): FeedEntry => ({
  team,
  kind: 'lead',
  id,
  version: 1,
  recordedAt: 1_798_761_600_000,
  body: '{}',
  removed: null,
});
const append = (store: SqliteStore, team: string, id: string) =>
  store.write(async (tx) => {
    await tx.lockFeedHead(team);
    return tx.appendFeed(entry(team, id));
  });

describe('SQLite feed head', () => {
  const stores: SqliteStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });
  const open = async (name: string) => {
    const store = new SqliteStore({ path: join(dir, name) });
    stores.push(store);
    await store.migrate();
    return store;
  };

  it('a head read again after this store commits is the new head', async () => {
    const store = await open('own.db');
    expect(await store.feedHead(TEAM)).toBe(0);
    await append(store, TEAM, 'lead_1');
    expect(await store.feedHead(TEAM)).toBe(1);
    await append(store, TEAM, 'lead_2');
    expect(await store.feedHead(TEAM)).toBe(2);
    expect(await store.feedHead(OTHER)).toBe(0);
  });

  it('a commit by another connection to the same file (another process) moves the head at once', async () => {
    const api = await open('shared.db');
    const other = await open('shared.db');
    expect(await api.feedHead(TEAM)).toBe(0);
    expect(await api.feedHead(TEAM)).toBe(0);
    await append(other, TEAM, 'lead_1');
    expect(await api.feedHead(TEAM)).toBe(1);
    await append(other, OTHER, 'lead_2');
    expect(await api.feedHead(TEAM)).toBe(1);
    expect(await api.feedHead(OTHER)).toBe(1);
  });
});
