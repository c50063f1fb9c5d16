import { afterEach, expect, it } from 'vitest';
import { encodeFeedCursor } from '../../src/feed/feed-cursor.js';
import { currentFeedEpoch, markRestore } from '../../src/feed/feed-epoch.js';
import { trimFeedOnce } from '../../src/feed/feed-jobs.js';
import { describeEachBackend } from '../support/backends.js';
import {
  DAY,
  expectApiError,
  type FeedWorld,
  feedWorld,
  keys,
  newLead,
  OTHER_TEAM,
  SECOND,
  T0,
  TEAM,
} from './feed-world.js';

// The spec's "Delivery rules" and the feed's error codes, one test per rule, with a manual clock.

describeEachBackend('changes feed: delivery rules', (makeStore) => {
  let w: FeedWorld;
  afterEach(async () => w?.store.close());

  it('the last 10 seconds of changes are held back', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'));
    const first = await w.read();
    expect(first.page.data).toEqual([]);
    expect(first.page.has_more).toBe(false);
    w.clock.advance(10 * SECOND - 1);
    expect((await w.read({ cursor: first.page.next_cursor })).page.data).toEqual([]);
    w.clock.advance(1);
    const ready = await w.read({ cursor: first.page.next_cursor });
    expect(keys(ready.page.data)).toContain('lead:lead_1');
    // A change recorded now stops the page even though older ones follow it in nothing.
    await w.apply({ type: 'lead.updated', at: T0, lead: 'lead_1', company: 'Acme' });
    expect((await w.read({ cursor: ready.page.next_cursor })).page.data).toEqual([]);
  });

  it('items come oldest first, in the order the service recorded the changes', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'));
    w.clock.advance(SECOND);
    await w.apply(newLead('lead_2'));
    w.clock.advance(SECOND);
    await w.apply({ type: 'lead.updated', at: T0, lead: 'lead_1', company: 'Acme' });
    w.clock.advance(20 * SECOND);
    const { items } = await w.readAll({ limit: 2 });
    const leads = items.filter((i) => i.kind === 'lead').map((i) => `${i.id}@${i.version}`);
    expect(leads).toEqual(['lead_1@1', 'lead_2@1', 'lead_1@2']);
    const stamps = items.map((i) => i.object?.updated_at as string);
    expect([...stamps].sort()).toEqual(stamps);
  });

  it('a removal stays in the feed for 45 days', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'), { type: 'lead.deleted', at: T0, lead: 'lead_1' });
    const removalAt = w.clock.now();
    w.clock.set(removalAt + 45 * DAY);
    await trimFeedOnce(w.store, w.clock, w.limits);
    const kept = (await w.readAll()).items.filter((i) => i.removed);
    expect(kept).toContainEqual({ kind: 'lead', id: 'lead_1', version: 2, removed: { reason: 'deleted' } });
    // A team's newest entry is never trimmed (the feed lag gauge reads it): a later change makes it an older one.
    await w.apply(newLead('lead_2'));
    w.clock.advance(1);
    await trimFeedOnce(w.store, w.clock, w.limits);
    expect((await w.readAll()).items.filter((i) => i.id === 'lead_1')).toEqual([]);
  });

  it('a removal purges earlier entries of the record at once', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1', { email: 'ada@example.com' }), { type: 'lead.erased', at: T0, lead: 'lead_1' });
    w.clock.advance(10 * SECOND);
    const items = (await w.readAll()).items.filter((i) => i.id === 'lead_1');
    expect(items.every((i) => i.removed?.reason === 'erased')).toBe(true);
    expect(JSON.stringify(items)).not.toContain('ada@example.com');
  });

  it('an entry superseded for a day is trimmed, so an initial sync mostly sees each record once', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'));
    w.clock.advance(SECOND);
    await w.apply({ type: 'lead.updated', at: T0, lead: 'lead_1', company: 'Acme' });
    const supersededAt = w.clock.now();
    w.clock.set(supersededAt + DAY - 1);
    await trimFeedOnce(w.store, w.clock, w.limits);
    const versions = async () =>
      (await w.readAll()).items.filter((i) => i.kind === 'lead' && i.id === 'lead_1').map((i) => i.version);
    expect(await versions()).toEqual([1, 2]);
    w.clock.set(supersededAt + DAY + 1);
    await trimFeedOnce(w.store, w.clock, w.limits);
    expect(await versions()).toEqual([2]);
  });

  it('a cursor expires 30 days after the point it reached', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'));
    w.clock.advance(10 * SECOND);
    const caughtUp = (await w.readAll()).cursor; // point reached: now minus the hold-back
    const reached = w.clock.now() - 10 * SECOND;
    w.clock.set(reached + 30 * DAY);
    const polled = await w.read({ cursor: caughtUp }); // exactly 30 days: still valid
    w.clock.advance(1);
    await expectApiError(w.read({ cursor: caughtUp }), 'sync_cursor_expired');
    // The cursor of the empty page polled on day 30 reached a newer point and still works.
    expect((await w.read({ cursor: polled.page.next_cursor })).page.data).toEqual([]);
  });

  it('while an initial sync runs a cursor expires 30 days after it started', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'), newLead('lead_2'), newLead('lead_3'));
    w.clock.advance(10 * SECOND);
    const started = w.clock.now();
    const p1 = await w.read({ limit: 1 });
    expect(p1.page.has_more).toBe(true);
    w.clock.set(started + 29 * DAY);
    const p2 = await w.read({ cursor: p1.page.next_cursor, limit: 1 });
    expect(p2.page.has_more).toBe(true);
    w.clock.set(started + 30 * DAY + 1);
    // Issued a day ago, but the initial sync it belongs to started more than 30 days ago.
    await expectApiError(w.read({ cursor: p2.page.next_cursor, limit: 1 }), 'sync_cursor_expired');
  });

  it('every page, even an empty one, returns a new next_cursor', async () => {
    w = await feedWorld(makeStore);
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let i = 0; i < 3; i++) {
      // The other team has no record at all: every page is empty.
      const { page } = await w.read({ team: OTHER_TEAM, ...(cursor === undefined ? {} : { cursor }) });
      expect(page.data).toEqual([]);
      expect(page.has_more).toBe(false);
      expect(typeof page.next_cursor).toBe('string');
      expect(page.next_cursor.length).toBeGreaterThan(0);
      expect(page.next_cursor.length).toBeLessThanOrEqual(512);
      expect(seen.has(page.next_cursor)).toBe(false);
      seen.add(page.next_cursor);
      cursor = page.next_cursor;
      w.clock.advance(60 * SECOND);
    }
  });

  it('the same cursor asks for the same page', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'), newLead('lead_2'), newLead('lead_3'));
    w.clock.advance(10 * SECOND);
    const first = await w.read({ limit: 2 });
    const cursor = first.page.next_cursor;
    const a = await w.read({ cursor, limit: 3 });
    expect(a.page.data).toHaveLength(3);
    const b = await w.read({ cursor, limit: 3 });
    expect(b.raw).toBe(a.raw);
    // Later changes (and time passing) do not alter a full page: byte for byte the same.
    await w.apply(newLead('lead_4'));
    w.clock.advance(60 * SECOND);
    expect((await w.read({ cursor, limit: 3 })).raw).toBe(a.raw);
  });

  it('a cursor sent with another team gets 400 invalid_request', async () => {
    w = await feedWorld(makeStore);
    const { page } = await w.read({ team: TEAM });
    await expectApiError(w.read({ team: OTHER_TEAM, cursor: page.next_cursor }), 'invalid_request');
    const altered = `${page.next_cursor.slice(0, -2)}AA`;
    await expectApiError(
      w.read({ team: TEAM, cursor: altered === page.next_cursor ? 'x' : altered }),
      'invalid_request',
    );
  });

  it('after a restore an old cursor gets 409 resync_required', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'));
    w.clock.advance(10 * SECOND);
    const old = (await w.readAll()).cursor;
    const { epoch } = await markRestore(w.store);
    expect(await currentFeedEpoch(w.store)).toBe(epoch);
    await expectApiError(w.read({ cursor: old }), 'resync_required');
    // The full resync starts without a cursor; its cursors work in the new epoch.
    const resync = await w.readAll();
    expect(keys(resync.items)).toContain('lead:lead_1');
    expect((await w.read({ cursor: resync.cursor })).page.data).toEqual([]);
  });

  it("a cursor beyond the feed's end gets 409 resync_required", async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'));
    const head = await w.store.feedHead(TEAM);
    // A genuine cursor of a server whose database then went back to an older backup, unmarked.
    const ahead = encodeFeedCursor(w.codec, TEAM, {
      epoch: await currentFeedEpoch(w.store),
      pos: head + 3,
      reachedAt: w.clock.now(),
      initialSyncStartedAt: null,
    });
    await expectApiError(w.read({ cursor: ahead }), 'resync_required');
    const atEnd = encodeFeedCursor(w.codec, TEAM, {
      epoch: await currentFeedEpoch(w.store),
      pos: head,
      reachedAt: w.clock.now(),
      initialSyncStartedAt: null,
    });
    expect((await w.read({ cursor: atEnd })).page.data).toEqual([]);
  });

  it('a cursor older than the removal retention gets 409 resync_required when configured to outlive it', async () => {
    w = await feedWorld(makeStore, { cursorLifetimeMs: 60 * DAY, removalRetentionMs: 45 * DAY });
    const { page } = await w.read();
    w.clock.advance(44 * DAY);
    await expect(w.read({ cursor: page.next_cursor })).resolves.toBeDefined();
    w.clock.advance(2 * DAY);
    await expectApiError(w.read({ cursor: page.next_cursor }), 'resync_required');
  });

  it('while a team is refused the feed delivers nothing, removals included', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'));
    w.clock.advance(10 * SECOND);
    const cursor = (await w.readAll()).cursor;
    await w.apply({ type: 'lead.erased', at: T0, lead: 'lead_1' });
    w.clock.advance(10 * SECOND);
    for (const code of ['team_state_restricted', 'sector_restricted', 'plan_not_entitled'] as const) {
      w.refused.set(TEAM, code);
      await expectApiError(w.read({ cursor }), code);
      await expectApiError(w.read(), code);
    }
    w.refused.delete(TEAM);
    const after = await w.read({ cursor });
    expect(after.page.data).toContainEqual({ kind: 'lead', id: 'lead_1', version: 2, removed: { reason: 'erased' } });
  });
});
