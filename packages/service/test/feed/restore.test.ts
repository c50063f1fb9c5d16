import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { markRestore } from '../../src/feed/feed-epoch.js';
import { feedPage } from '../../src/feed/feed-page.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { Crm } from '../../src/write/events/crm.js';
import { describeEachBackend } from '../support/backends.js';
import { expectApiError, type FeedPageJson, feedWorld, newLead, SECOND, T0, TEAM } from './feed-world.js';

// A real restore: the SQLite database file is put back to a copy taken earlier. The feed's end then
// moves back, and cursors issued after the backup would receive lower versions without the mark.

describeEachBackend('changes feed: restore from backup', (_makeStore, backend) => {
  const dir = mkdtempSync(join(tmpdir(), 'crm-export-restore-'));
  const path = join(dir, 'feed.db');
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = async () => {
    const s = new SqliteStore({ path });
    await s.migrate();
    store = s;
    return s;
  };

  // The restore copies a SQLite file back, whichever backend the suite runs on: once is enough.
  const skippedUnlessSqlite = backend === 'sqlite' ? '' : ' (skipped: restores a SQLite file; runs under [sqlite])';
  it.runIf(backend === 'sqlite')(
    `after a restore an old cursor gets 409 resync_required${skippedUnlessSqlite}`,
    async () => {
      const w = await feedWorld(open);
      const { codec, clock, principal, limits } = w;
      const readOn = (s: Store, cursor?: string, limit = 100) =>
        feedPage(
          { store: s, clock, limits, codec, access: { checkTeam: async () => {} } },
          { principal, team: TEAM, cursor, limit },
        );
      await w.apply(newLead('lead_1'), newLead('lead_2'));
      clock.advance(10 * SECOND);
      await w.readAll();
      await w.store.close(); // the last connection closing checkpoints the WAL into the file
      copyFileSync(path, `${path}.backup`);

      const live = await open();
      const crm = new Crm(live, clock);
      await crm.apply({ type: 'lead.updated', at: T0, lead: 'lead_1', company: 'Acme' });
      await crm.apply(newLead('lead_3'));
      clock.advance(10 * SECOND);
      // An early position, still inside the backup, and the end, beyond it.
      const midway = (JSON.parse((await readOn(live, undefined, 1)).json.toString()) as FeedPageJson).next_cursor;
      let atEnd: string | undefined;
      for (let more = true; more; ) {
        const page = JSON.parse((await readOn(live, atEnd)).json.toString()) as FeedPageJson;
        atEnd = page.next_cursor;
        more = page.has_more;
      }
      await live.close();

      for (const suffix of ['-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
      copyFileSync(`${path}.backup`, path);
      const restored = await open();
      await expectApiError(readOn(restored, atEnd), 'resync_required'); // beyond the feed's end: detected on its own
      await expect(readOn(restored, midway)).resolves.toBeDefined(); // inside the restored feed: undetectable unmarked
      await markRestore(restored);
      await expectApiError(readOn(restored, midway), 'resync_required');
      await expectApiError(readOn(restored, atEnd), 'resync_required');
    },
  );
});
