import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ENTRY_OVERHEAD_BYTES, entryCost, PageCache } from '../../src/http/page-cache.js';
import { KEY_A, lead, put, remove, TEAM_A, team } from './fixtures.js';
import { auth, type Harness, harness } from './harness.js';

describe('page cache', () => {
  it('keeps a page only for the feed head it was read at, and stays within its byte budget', () => {
    const budget = 5 * entryCost('a', Buffer.alloc(200));
    const cache = new PageCache(budget);
    cache.set('a', 7, Buffer.alloc(200), 3);
    expect(cache.get('a', 7)?.items).toBe(3);
    expect(cache.get('a', 8)).toBeUndefined();
    expect(cache.get('a', 7)).toBeUndefined();
    for (const key of ['b', 'c', 'd', 'e', 'f', 'g']) cache.set(key, 1, Buffer.alloc(200), 1);
    expect(cache.size).toBeLessThanOrEqual(budget);
    expect(cache.get('b', 1)).toBeUndefined(); // least recently used went first
    expect(cache.get('g', 1)).toBeDefined();
    cache.set('huge', 1, Buffer.alloc(Math.ceil(budget / 4)), 1); // larger than a quarter of the budget: never kept
    expect(cache.get('huge', 1)).toBeUndefined();
  });

  it('charges every page its key and a fixed cost: long filter ids and empty pages stay within the budget', () => {
    const budget = 256 * 1024;
    const cache = new PageCache(budget);
    const longKey = (i: number) => `list_calls\u0000team_A1\u0000lead=lead_${i}${'x'.repeat(15_000)}\u00000\u00001`;
    const shortKey = (i: number) => `list_calls\u0000team_A1\u0000lead=lead_${i}\u00000\u00001`;
    const empty = Buffer.alloc(0);
    const kept = (key: (i: number) => string, n: number) =>
      Array.from({ length: n }, (_, i) => key(i)).filter((k) => cache.get(k, 1) !== undefined).length;

    for (let i = 0; i < 1_000; i++) cache.set(longKey(i), 1, empty, 0);
    expect(cache.size).toBeLessThanOrEqual(budget);
    expect(kept(longKey, 1_000)).toBeLessThanOrEqual(budget / (2 * 15_000));

    for (let i = 0; i < 10_000; i++) cache.set(shortKey(i), 1, empty, 0);
    expect(cache.size).toBeLessThanOrEqual(budget);
    expect(kept(shortKey, 10_000)).toBeLessThanOrEqual(budget / ENTRY_OVERHEAD_BYTES);
    expect(cache.get(shortKey(9_999), 1)).toBeDefined(); // the newest are kept
  });
});

describe('GET /v1/leads with the page cache', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness();
    await put(h.store, 'team', team(TEAM_A));
    await put(h.store, 'lead', lead('lead_1', TEAM_A));
    await put(h.store, 'lead', lead('lead_2', TEAM_A));
  });
  afterEach(() => h.close());

  const list = async () => {
    const res = await h.app.inject({ url: '/v1/leads?limit=10', headers: auth(KEY_A) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    return res.json() as { data: { id: string; version: number; name: string | null }[] };
  };

  it('a repeated page is the same page, and a changed record shows on the very next request', async () => {
    const first = await list();
    expect(await list()).toEqual(first);
    await put(h.store, 'lead', lead('lead_1', TEAM_A, { version: 2, name: 'Renamed' }));
    const after = await list();
    expect(after.data.find((l) => l.id === 'lead_1')).toMatchObject({ version: 2, name: 'Renamed' });
  });

  it('a removed record is gone from the very next page', async () => {
    await list();
    await remove(h.store, 'lead', 'lead_2', TEAM_A, 'deleted', 2);
    expect((await list()).data.map((l) => l.id)).toEqual(['lead_1']);
  });

  it('a new record appears on the very next page', async () => {
    await list();
    await put(h.store, 'lead', lead('lead_3', TEAM_A));
    expect((await list()).data.map((l) => l.id)).toEqual(['lead_1', 'lead_2', 'lead_3']);
  });
});
