import type { ListQuery, Store } from '../../src/store/store.js';

/** Every page of a list, `limit` records a page, in order: each page's last position and its records' JSON. */
export async function walkPages(
  store: Store,
  list: Omit<ListQuery, 'after' | 'limit'>,
  limit: number,
): Promise<{ last: number; json: string }[]> {
  const out: { last: number; json: string }[] = [];
  let after = 0;
  for (;;) {
    const page = await store.listPage({ ...list, after, limit });
    if (page.count > 0 && page.last) out.push({ last: page.last.seq, json: page.items.toString('utf8') });
    if (!page.hasMore || !page.last) return out;
    after = page.last.seq;
  }
}
