import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FeedRow, JsonFeedPage, Store } from '../../src/store/store.js';
import { type FeedWorld, feedWorld, newLead, SECOND, T0 } from '../feed/feed-world.js';
import { describeEachBackend } from '../support/backends.js';
import { withFirstPageOutOfOrder } from '../support/joined-order.js';

// Store.feedPage renders and joins a feed page in the database. Here it is held against the per-row
// reading it replaced on the route: readFeed's rows, cut before the first entry recorded after the
// cutoff, each rendered as a feed item in JavaScript. Same bytes, same boundaries, on every backend.

/** A feed item as the route rendered it from a row before the database did. */
function itemOf(row: FeedRow): string {
  const head = `{"kind":"${row.kind}","id":"${row.id}","version":${row.version},`;
  return row.removed !== null || row.body === null
    ? `${head}"removed":{"reason":"${row.removed ?? 'deleted'}"}}`
    : `${head}"object":${row.body}}`;
}

/** The page the old route built: limit + 1 rows, cut at the cutoff, the first `limit` rendered. */
async function perRowPage(store: Store, team: string, after: number, limit: number, cutoff: number) {
  const rows = await store.readFeed(team, after, limit + 1);
  let ready = 0;
  while (ready < rows.length && (rows[ready] as FeedRow).recordedAt <= cutoff) ready++;
  const page = rows.slice(0, Math.min(ready, limit));
  const last = page[page.length - 1];
  return {
    items: page.map(itemOf).join(','),
    count: page.length,
    hasMore: ready > limit,
    last: last ? { pos: last.pos, recordedAt: last.recordedAt } : null,
    head: await store.feedHead(team),
  };
}

const plain = (page: JsonFeedPage) => ({ ...page, items: page.items.toString('utf8') });

describeEachBackend('Feed pages joined by the database', (makeStore) => {
  let w: FeedWorld;
  let rows: FeedRow[];
  let times: number[];
  let head: number;
  beforeAll(async () => {
    w = await feedWorld(makeStore);
    // Leads with names outside ASCII and quotes, updated (earlier entries then keep bodies of their
    // own), deleted and erased (removal entries), each step recorded a second after the one before.
    const names = ['Zoë', 'Łukasz', '李雷', 'Renée 🚀', 'O"Brien\\'];
    for (let i = 0; i < 24; i++) {
      await w.apply(newLead(`lead_${i}`, { name: names[i % names.length] ?? 'Ada' }));
      w.clock.advance(SECOND);
      if (i % 4 === 1) {
        await w.apply({ type: 'lead.updated', at: T0, lead: `lead_${i - 1}`, company: `Acme ${i}` });
        w.clock.advance(SECOND);
      }
      if (i % 6 === 5) {
        await w.apply({ type: i % 12 === 5 ? 'lead.deleted' : 'lead.erased', at: T0, lead: `lead_${i - 2}` });
        w.clock.advance(SECOND);
      }
    }
    rows = await w.store.readFeed('team_A1', 0, 1000);
    times = rows.map((r) => r.recordedAt);
    head = await w.store.feedHead('team_A1');
    // Erasures purged earlier entries of the erased records: positions have gaps, as in real feeds.
    expect(rows.length).toBeLessThan(head);
    // The data holds every kind of entry the rendering distinguishes.
    expect(rows.some((r) => r.removed === 'deleted')).toBe(true);
    expect(rows.some((r) => r.removed === 'erased')).toBe(true);
    expect(rows.some((r) => r.removed === null && r.body !== null)).toBe(true);
  });
  afterAll(() => w.store.close());

  it('every page, whatever the position, the limit and the hold-back cutoff, holds the bytes of the per-row page', async () => {
    const first = times[0] as number;
    const lastTime = times[times.length - 1] as number;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: head + 2 }),
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: first - 2 * SECOND, max: lastTime + 2 * SECOND }),
        async (after, limit, cutoff) => {
          const page = await w.store.feedPage({ team: 'team_A1', after, limit, cutoff });
          expect(plain(page)).toEqual(await perRowPage(w.store, 'team_A1', after, limit, cutoff));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a walk page by page delivers every entry once, in feed order, and stops at the hold-back cutoff', async () => {
    const cutoff = times[Math.floor(times.length / 2)] as number;
    const ready = rows.slice(
      0,
      rows.findIndex((r) => r.recordedAt > cutoff),
    );
    const delivered: string[] = [];
    const lasts: number[] = [];
    for (let after = 0; ; ) {
      const page = await w.store.feedPage({ team: 'team_A1', after, limit: 7, cutoff });
      const items = JSON.parse(`[${page.items.toString('utf8')}]`) as unknown[];
      expect(items).toHaveLength(page.count);
      if (page.count > 0) delivered.push(page.items.toString('utf8'));
      if (!page.hasMore || !page.last) break;
      lasts.push(page.last.pos);
      after = page.last.pos;
    }
    expect(delivered.join(',')).toBe(ready.map(itemOf).join(','));
    expect(lasts).toEqual(ready.filter((_, i) => (i + 1) % 7 === 0 && i + 1 < ready.length).map((r) => r.pos));
  });

  it('an empty team, or a position at the head, is an empty page with nothing after it', async () => {
    const now = w.clock.now();
    for (const [team, after] of [
      ['team_B1', 0],
      ['team_A1', head],
    ] as const) {
      expect(plain(await w.store.feedPage({ team, after, limit: 100, cutoff: now }))).toEqual({
        items: '',
        count: 0,
        hasMore: false,
        last: null,
        head: await w.store.feedHead(team),
      });
    }
  });

  it('a page the database joined out of position order is read again sorted: the same bytes as an ordered page', async () => {
    const query = { team: 'team_A1', after: 0, limit: 30, cutoff: w.clock.now() };
    const expected = plain(await w.store.feedPage(query));
    const { value: page, texts } = await withFirstPageOutOfOrder(w.store, () => w.store.feedPage(query));
    expect(plain(page)).toEqual(expected);
    expect(texts).toHaveLength(2);
    expect(texts[1]).toMatch(/ORDER BY seq\)/);
  });
});
