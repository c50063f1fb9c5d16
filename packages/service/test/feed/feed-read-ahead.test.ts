import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { type FeedDeps, feedPage } from '../../src/feed/feed-page.js';
import { FeedReadAhead } from '../../src/feed/feed-read-ahead.js';
import type { FeedPageQuery, JsonFeedPage } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { type FeedPageJson, type FeedWorld, feedWorld, newLead, SECOND, T0, TEAM } from './feed-world.js';

// The feed reads the next page of a walk while the consumer parses the one it got. A page read ahead
// answers a request only when it is exactly what reading then would give: the same bytes as a walk
// without read-ahead, a change committed in between shows, entries inside the hold-back are not frozen.

/** Feed dependencies of a world, with or without a read-ahead. */
function depsOf(w: FeedWorld, readAhead?: FeedReadAhead): FeedDeps {
  const { store, clock, limits, codec } = w;
  return { store, clock, limits, codec, access: { checkTeam: async () => {} }, ...(readAhead ? { readAhead } : {}) };
}

async function read(deps: FeedDeps, w: FeedWorld, cursor: string | undefined, limit: number) {
  const raw = (await feedPage(deps, { principal: w.principal, team: TEAM, cursor, limit })).json.toString();
  return { raw, page: JSON.parse(raw) as FeedPageJson };
}

describeEachBackend('Feed read-ahead', (makeStore) => {
  it('a walk with read-ahead gets the bytes of a walk without it, every page after the first read ahead', async () => {
    const w = await feedWorld(makeStore);
    for (let i = 0; i < 12; i++) await w.apply(newLead(`lead_${i}`));
    w.clock.advance(20 * SECOND);
    const readAhead = new FeedReadAhead(w.store, w.clock);
    const walks: string[][] = [];
    for (const deps of [depsOf(w), depsOf(w, readAhead)]) {
      const pages: string[] = [];
      for (let cursor: string | undefined; ; ) {
        const { raw, page } = await read(deps, w, cursor, 5);
        pages.push(raw);
        cursor = page.next_cursor;
        if (!page.has_more) break;
      }
      walks.push(pages);
    }
    expect(walks[1]).toEqual(walks[0]);
    const pages = walks[0]?.length ?? 0;
    expect(pages).toBeGreaterThan(5);
    // Each full page starts a read of the next; the last one read ahead is the walk's last page, which was
    // not full when read and is read again.
    expect(readAhead.stats).toMatchObject({ used: pages - 2, stale: 1, unused: 0 });
    await w.store.close();
  });

  it('a change committed after the next page was read ahead shows on that page: it is read again', async () => {
    const w = await feedWorld(makeStore);
    for (let i = 0; i < 8; i++) await w.apply(newLead(`lead_${i}`));
    w.clock.advance(20 * SECOND);
    const readAhead = new FeedReadAhead(w.store, w.clock);
    const first = await read(depsOf(w, readAhead), w, undefined, 6);
    await readAhead.idle();
    // Erase a lead whose entries the page read ahead holds: the erasure purges them from the feed.
    const ahead = await read(depsOf(w), w, first.page.next_cursor, 6);
    const erased = ahead.page.data.find((item) => item.kind === 'lead')?.id as string;
    expect(erased).toBeDefined();
    await w.apply({ type: 'lead.erased', at: T0, lead: erased });
    w.clock.advance(20 * SECOND);

    const next = await read(depsOf(w, readAhead), w, first.page.next_cursor, 6);
    expect(next.raw).toBe((await read(depsOf(w), w, first.page.next_cursor, 6)).raw);
    expect(next.page.data.filter((item) => item.id === erased && !item.removed)).toEqual([]);
    expect(readAhead.stats).toMatchObject({ used: 0, stale: 1 });
    await w.store.close();
  });

  it('entries inside the hold-back when the next page was read ahead are delivered once they are ready', async () => {
    const w = await feedWorld(makeStore);
    for (let i = 0; i < 4; i++) await w.apply(newLead(`lead_${i}`));
    const old = (await w.store.readFeed(TEAM, 0, 1000)).length;
    w.clock.advance(20 * SECOND);
    // Recorded now: inside the 10 s hold-back for the pages read next.
    for (let i = 4; i < 8; i++) await w.apply(newLead(`lead_${i}`));
    // The first page leaves two ready entries for the next, which is read ahead cut short by the hold-back.
    const limit = old - 2;
    const readAhead = new FeedReadAhead(w.store, w.clock);
    const first = await read(depsOf(w, readAhead), w, undefined, limit);
    expect(first.page.has_more).toBe(true);
    await readAhead.idle();
    w.clock.advance(20 * SECOND);

    const next = await read(depsOf(w, readAhead), w, first.page.next_cursor, limit);
    expect(next.raw).toBe((await read(depsOf(w), w, first.page.next_cursor, limit)).raw);
    expect(next.page.data).toHaveLength(limit);
    expect(next.page.data.some((item) => item.id === 'lead_4')).toBe(true);
    expect(readAhead.stats.used).toBe(0);
    await w.store.close();
  });
});

/** A store whose every page is full; the first `failures` page reads throw. */
function fakeStore(options: { failures?: number } = {}) {
  let reads = 0;
  return {
    get reads() {
      return reads;
    },
    async feedHead() {
      return 7;
    },
    async feedPage(q: FeedPageQuery): Promise<JsonFeedPage> {
      reads++;
      if (reads <= (options.failures ?? 0)) throw new Error('connection lost');
      return { items: Buffer.from('{}'), count: 1, hasMore: true, last: { pos: q.after + 1, recordedAt: 0 }, head: 7 };
    },
  };
}

const query = (after: number): FeedPageQuery => ({ team: 'team_A1', after, limit: 1, cutoff: 0 });

describe('Feed read-ahead: what it costs when nobody asks', () => {
  it('keeps at most its capacity and drops the oldest as unused', async () => {
    const readAhead = new FeedReadAhead(fakeStore(), new ManualClock(0), 2);
    for (let after = 0; after < 5; after++) readAhead.readNext(query(after), 0);
    expect(readAhead.stats).toMatchObject({ started: 5, unused: 3 });
  });

  it('stops reading ahead while most read-aheads are wasted, probes one in sixteen, and starts again once a probe is used', async () => {
    const store = fakeStore();
    const readAhead = new FeedReadAhead(store, new ManualClock(0), 1);
    for (let after = 0; after < 200; after++) readAhead.readNext(query(after), 0);
    // Eight wasted beyond the used ones are tolerated, then one in sixteen.
    expect(readAhead.stats.started).toBeGreaterThan(9);
    expect(readAhead.stats.started).toBeLessThan(30);

    // Consumers come back: a probe is asked for and used, and every full page reads ahead again.
    let after = 1000;
    while (readAhead.stats.used === 0) {
      readAhead.readNext(query(after), 0);
      await readAhead.page(query(after), 7);
      after++;
    }
    const started = readAhead.stats.started;
    for (let i = 0; i < 10; i++, after++) {
      readAhead.readNext(query(after), 0);
      await readAhead.page(query(after), 7);
    }
    expect(readAhead.stats.started).toBe(started + 10);
    expect(readAhead.stats.used).toBe(11);
  });

  it('a read-ahead that failed leaves the request to read its page itself', async () => {
    const store = fakeStore({ failures: 1 });
    const readAhead = new FeedReadAhead(store, new ManualClock(0));
    readAhead.readNext(query(3), 0);
    await readAhead.idle();
    expect((await readAhead.page(query(3), 7)).last).toEqual({ pos: 4, recordedAt: 0 });
    expect(store.reads).toBe(2);
    expect(readAhead.stats).toMatchObject({ used: 0, stale: 1 });
  });

  it('a read-ahead older than thirty seconds is dropped, not served', async () => {
    const clock = new ManualClock(0);
    const readAhead = new FeedReadAhead(fakeStore(), clock);
    readAhead.readNext(query(1), 0);
    await readAhead.idle();
    clock.advance(31 * SECOND);
    readAhead.readNext(query(2), 0);
    expect(readAhead.stats.unused).toBe(1);
  });
});
