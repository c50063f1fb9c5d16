import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { feedPage } from '../../src/feed/feed-page.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { replayErasures } from '../../src/write/events/erasure-replay.js';
import { runCli } from '../cli/cli.js';
import { describeEachBackend } from '../support/backends.js';
import { openSqliteFile } from '../support/sqlite-file.js';
import { expectApiError, type FeedPageJson, feedWorld, newLead, SECOND, T0, TEAM } from './feed-world.js';

// `crm-export admin backup` (SQLite's VACUUM INTO, run as the operator runs it, while this process
// writes) and the restore procedure of docs/backup-restore.md: a person erased after the backup stays erased.

const dir = mkdtempSync(join(tmpdir(), 'crm-export-backup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const stores: Store[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});
const openFile = async (path: string) => {
  const s = new SqliteStore({ path });
  await s.migrate();
  stores.push(s);
  return s;
};

describe('crm-export admin backup (SQLite)', { timeout: 120_000 }, () => {
  it('backs up while writes run: the copy passes PRAGMA integrity_check and holds a consistent prefix', async () => {
    const path = join(dir, 'live.db');
    const copy = join(dir, 'copy.db');
    const w = await feedWorld(() => openFile(path));
    for (let batch = 0; batch < 4; batch++)
      await w.crm.applyBatch(Array.from({ length: 500 }, (_, i) => newLead(`lead_P${batch * 500 + i}`)));

    // One lead per transaction, in order, for as long as the backup runs.
    let written = 0;
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        await w.apply(newLead(`lead_W${written + 1}`));
        written++;
        await yieldToLoop();
      }
    })();
    const before = written;
    const result = await runCli(['admin', 'backup', '--db', `sqlite:${path}`, '--to', copy, '--json']);
    const after = written;
    stop = true;
    await writer;
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).backup).toBe(copy);
    expect(after).toBeGreaterThan(before); // the service really wrote while the copy was taken

    const db = openSqliteFile(copy, { readonly: true });
    try {
      expect(db.prepare('PRAGMA integrity_check').pluck().get()).toBe('ok');
      const ids = (
        db.prepare("SELECT id FROM records WHERE kind = 'lead' AND id LIKE 'lead_W%'").all() as { id: string }[]
      )
        .map((r) => Number(r.id.slice('lead_W'.length)))
        .sort((a, b) => a - b);
      // A prefix: leads 1..k, nothing after a gap, k somewhere between the start and the end of the copy.
      expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
      expect(ids.length).toBeGreaterThanOrEqual(before);
      expect(ids.length).toBeLessThanOrEqual(written);
      const leads = db.prepare("SELECT count(*) AS n FROM records WHERE kind = 'lead'").get() as { n: number };
      expect(leads.n).toBe(2000 + ids.length);
      // Every record's feed entry is there too, and the team's feed has no hole.
      const feed = db.prepare('SELECT count(*) AS n, max(pos) AS head FROM feed WHERE team = ?').get(TEAM) as {
        n: number;
        head: number;
      };
      const head = db.prepare('SELECT last_pos FROM feed_heads WHERE team = ?').get(TEAM) as { last_pos: number };
      expect(feed.head).toBe(head.last_pos);
      expect(feed.n).toBe(head.last_pos);
      const feedLeads = db
        .prepare("SELECT count(*) AS n FROM feed WHERE kind = 'lead' AND id LIKE 'lead_W%'")
        .get() as { n: number };
      expect(feedLeads.n).toBe(ids.length);
    } finally {
      db.close();
    }
    // The copy is a working database.
    const restored = await openFile(copy);
    expect((await restored.getRecord('lead', 'lead_W1'))?.removed).toBeNull();
  });

  it('refuses to overwrite an existing file unless --force', async () => {
    const path = join(dir, 'small.db');
    const copy = join(dir, 'small-copy.db');
    const w = await feedWorld(() => openFile(path));
    await w.apply(newLead('lead_1'));
    expect((await runCli(['admin', 'backup', '--db', `sqlite:${path}`, '--to', copy])).code).toBe(0);
    const size = statSync(copy).size;
    await w.apply(newLead('lead_2'));

    const refused = await runCli(['admin', 'backup', '--db', `sqlite:${path}`, '--to', copy, '--json']);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).error.message).toContain('exists');
    expect(statSync(copy).size).toBe(size);

    const forced = await runCli(['admin', 'backup', '--db', `sqlite:${path}`, '--to', copy, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect((await (await openFile(copy)).getRecord('lead', 'lead_2'))?.removed).toBeNull();
  });

  it('on PostgreSQL explains to use pg_dump, without connecting or writing anything', async () => {
    const copy = join(dir, 'pg-copy.db');
    const result = await runCli(['admin', 'backup', '--db', 'postgres://nobody@127.0.0.1:1/none', '--to', copy]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('pg_dump');
    expect(existsSync(copy)).toBe(false);
  });
});

describe('restore procedure (SQLite file)', { timeout: 120_000 }, () => {
  it('restore after an erasure: the erased person is not served or re-delivered', async () => {
    const path = join(dir, 'restore.db');
    const backup = join(dir, 'restore-backup.db');
    const erasures = join(dir, 'erasures.ndjson');
    const db = `sqlite:${path}`;
    const w = await feedWorld(() => openFile(path));
    const { codec, clock, principal, limits } = w;
    const readOn = async (s: Store, cursor?: string) =>
      JSON.parse(
        (
          await feedPage(
            { store: s, clock, limits, codec, access: { checkTeam: async () => {} } },
            { principal, team: TEAM, cursor, limit: 100 },
          )
        ).json.toString(),
      ) as FeedPageJson;
    await w.apply(newLead('lead_1', { email: 'grace@example.com' }), newLead('lead_2'));
    expect((await runCli(['admin', 'backup', '--db', db, '--to', backup])).code).toBe(0);

    // After the backup point: lead_1's person is erased; a consumer reads the feed to its end.
    clock.advance(10 * SECOND);
    await w.apply({ type: 'lead.erased', at: T0, lead: 'lead_1' });
    const { cursor: consumerCursor } = await w.readAll();
    await (stores.pop() as Store).close();

    // The documented procedure: export erasures, restore the file, mark the restore, replay.
    expect((await runCli(['admin', 'erasures', 'export', '--db', db, '--to', erasures])).code).toBe(0);
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
    copyFileSync(backup, path);
    expect((await runCli(['admin', 'feed', 'mark-restore', '--db', db, '--yes'])).code).toBe(0);
    const beforeReplay = await openFile(path);
    // Without the replay the restored database would serve the person again.
    expect((await beforeReplay.getRecord('lead', 'lead_1'))?.removed).toBeNull();
    await (stores.pop() as Store).close();
    const replay = await runCli(['admin', 'erasures', 'replay', erasures, '--db', db, '--yes', '--json']);
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout).erased).toBe(1);

    const restored = await openFile(path);
    expect((await restored.getRecord('lead', 'lead_1'))?.removed).toBe('erased');
    const listed = await restored.listRecords({ team: TEAM, kind: 'lead', after: 0, limit: 100 });
    expect(listed.map((r) => JSON.parse(r.json).id)).toEqual(['lead_2']);
    expect(await restored.searchLeads({ team: TEAM, email: 'grace@example.com', after: 0, limit: 10 })).toEqual([]);
    // The consumer's cursor is refused (full resync), and the resync never delivers the person again.
    await expectApiError(readOn(restored, consumerCursor), 'resync_required');
    const items: FeedPageJson['data'] = [];
    for (let cursor: string | undefined, more = true; more; ) {
      const page = await readOn(restored, cursor);
      items.push(...page.data);
      cursor = page.next_cursor;
      more = page.has_more;
    }
    expect(items.some((i) => i.id === 'lead_2' && i.object)).toBe(true);
    // At most its removal, never its record.
    expect(items.filter((i) => i.id === 'lead_1' && !i.removed)).toEqual([]);
    expect(JSON.stringify(items)).not.toContain('grace@example.com');
  });
});

describeEachBackend('erasure replay', (makeStore) => {
  it('erases again a person the restored database still serves, once', async () => {
    const live = await feedWorld(makeStore);
    const restored = await feedWorld(makeStore);
    stores.push(live.store, restored.store);
    for (const w of [live, restored]) await w.apply(newLead('lead_1'), newLead('lead_2'));
    await live.apply({ type: 'lead.erased', at: T0, lead: 'lead_1' });
    const list = await live.store.erasedRecords();
    expect(list.map((r) => `${r.kind} ${r.id}`)).toContain('lead lead_1');
    expect(JSON.stringify(list)).not.toContain('lead_2');

    const first = await replayErasures(restored.store, restored.clock, list);
    expect(first).toMatchObject({ erased: 1, stillLive: [] });
    expect((await restored.store.getRecord('lead', 'lead_1'))?.removed).toBe('erased');
    expect((await restored.store.getRecord('lead', 'lead_2'))?.removed).toBeNull();
    const second = await replayErasures(restored.store, restored.clock, list);
    expect(second).toMatchObject({ erased: 0, unchanged: list.length, stillLive: [] });
  });
});
