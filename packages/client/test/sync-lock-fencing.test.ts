// Rule 3's lock is checked when a write commits: a process stalled past the lock's staleness, whose lock
// another process took over, writes nothing more (docs/mirror.md, rule 3).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CrmExportClient } from '../src/client/crm-export-client.js';
import type { ChangesParams } from '../src/client/endpoint-params.js';
import { ReferenceIndex } from '../src/sync/references.js';
import { keyDigest, SyncLock, SyncLockLostError } from '../src/sync/sync-lock.js';
import { type FakeServer, startFakeServer } from './support/fake-server.js';
import { type Harness, MIRROR_BACKENDS, mirrorHarness } from './support/mirror-harness.js';

const T = 'team_a';
/** Stale after 100 ms, and no heartbeat of its own while the test runs: a stall is simply a wait. */
const LOCK = { staleAfterMs: 100, heartbeatMs: 60_000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A client whose feed answer for `cursor` is held (after the server answered) until `release()`. */
function stallingClient(fake: FakeServer, cursor: string | undefined) {
  const client = new CrmExportClient({ baseUrl: fake.url, key: fake.key, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
  const real = client.changes.bind(client);
  let stalled!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => {
    stalled = resolve;
  });
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held = false;
  client.changes = async (params: ChangesParams = {}) => {
    const page = await real(params);
    if (!held && params.cursor === cursor) {
      held = true;
      stalled();
      await gate;
    }
    return page;
  };
  return { client, reached, release };
}

for (const backend of MIRROR_BACKENDS) {
  describe(`sync lock fencing on ${backend}`, () => {
    let fake: FakeServer;
    let h: Harness;

    beforeEach(async () => {
      fake = await startFakeServer([T]);
      for (const n of [1, 2, 3]) fake.put(T, 'call', { id: `call_${n}`, object: 'call' });
      fake.maxPageItems = 1;
      h = await mirrorHarness(fake, backend);
    });
    afterEach(async () => {
      await h.mirror.close();
      await fake.close();
    });

    const teamRow = () => h.mirror.db.selectFrom('mirror_teams').selectAll().where('team', '=', T).executeTakeFirst();

    it("a process that stalled past the lock's staleness never commits its page: the cursor never moves back", async () => {
      const a = stallingClient(fake, undefined);
      const stopA = new AbortController();
      const runA = h.engine({ client: a.client, lock: LOCK, signal: stopA.signal }).run();
      await a.reached;
      await sleep(LOCK.staleAfterMs + 50);
      // Another process takes the stale lock over and syncs to the end.
      await expect(h.engine({ lock: LOCK }).run()).resolves.toEqual({ [T]: 'caught_up' });
      expect(await h.cursor(T)).toBe('cur_team_a_3');
      // The stalled one wakes up holding page 1; it would stop right after committing it.
      stopA.abort();
      a.release();
      await expect(runA).rejects.toBeInstanceOf(SyncLockLostError);
      expect(await h.cursor(T)).toBe('cur_team_a_3');
      expect((await h.rows()).map((r) => r.id)).toEqual(['call_1', 'call_2', 'call_3']);
      expect(await h.mirror.db.selectFrom('mirror_locks').selectAll().execute()).toEqual([]);
    });

    it("a stalled process's last resync page never runs the sweep during another process's resync", async () => {
      await h.engine().run();
      await h.store.startResync(T);
      // A resyncs pages 1 and 2, then stalls holding page 3 (has_more false: the page that sweeps).
      const a = stallingClient(fake, 'cur_team_a_2');
      const runA = h.engine({ client: a.client, lock: LOCK }).run();
      await a.reached;
      await sleep(LOCK.staleAfterMs + 50);
      // B takes over, is told to resync again, stores page 1 and stalls before page 2: call_2 and call_3
      // are unmarked, waiting to be delivered again.
      fake.inject('/sync/changes', { status: 409, code: 'resync_required' });
      const b = stallingClient(fake, 'cur_team_a_1');
      const runB = h.engine({ client: b.client, lock: LOCK }).run();
      await b.reached;
      a.release();
      await expect(runA).rejects.toBeInstanceOf(SyncLockLostError);
      expect((await h.rows()).map((r) => r.id)).toEqual(['call_1', 'call_2', 'call_3']);
      expect(await teamRow()).toMatchObject({ cursor: 'cur_team_a_1', resyncing: 1 });
      b.release();
      await expect(runB).resolves.toEqual({ [T]: 'caught_up' });
      expect((await h.rows()).map((r) => r.id)).toEqual(['call_1', 'call_2', 'call_3']);
      expect(await teamRow()).toMatchObject({ cursor: 'cur_team_a_3', resyncing: 0 });
    });

    it('every write of a team is refused to a process that lost its lock: page, resync, deletion, references', async () => {
      await h.engine().run();
      const before = { rows: await h.rows(), team: await teamRow() };
      const stale = new SyncLock(h.mirror.db, keyDigest(fake.key), T, LOCK);
      await stale.acquire();
      await sleep(LOCK.staleAfterMs + 50);
      const taker = new SyncLock(h.mirror.db, keyDigest(fake.key), T, LOCK);
      await taker.acquire();
      const fence = (trx: Parameters<SyncLock['holdIn']>[0]) => stale.holdIn(trx);
      const page = { data: [], has_more: false, next_cursor: 'cur_team_a_0' };
      await expect(h.store.applyPage(T, page, fence)).rejects.toBeInstanceOf(SyncLockLostError);
      await expect(h.store.startResync(T, fence)).rejects.toBeInstanceOf(SyncLockLostError);
      await expect(h.store.deleteTeam(T, fence)).rejects.toBeInstanceOf(SyncLockLostError);
      const client = new CrmExportClient({ baseUrl: fake.url, key: fake.key });
      await expect(new ReferenceIndex(h.store, T, fence).refresh(client)).rejects.toBeInstanceOf(SyncLockLostError);
      expect({ rows: await h.rows(), team: await teamRow() }).toEqual(before);
      expect(stale.lost).toBe(true);
      // The holder's own writes go through.
      await h.store.applyPage(T, page, (trx) => taker.holdIn(trx));
      expect(await h.cursor(T)).toBe('cur_team_a_0');
      await stale.release();
      await taker.release();
      expect(await h.mirror.db.selectFrom('mirror_locks').selectAll().execute()).toEqual([]);
    });
  });
}
