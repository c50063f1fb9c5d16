import { PagingLimitError } from './errors.js';
import type { ListPage } from './types.js';

/**
 * Yields every item of a paged list. Follows `has_more` even when a page holds fewer items than asked
 * (the spec allows short pages), and stops with an error at `maxPages` so a misbehaving server cannot
 * keep a consumer looping for ever.
 */
export async function* autoPage<T>(
  fetchPage: (cursor: string | undefined) => Promise<ListPage<T>>,
  maxPages: number,
): AsyncGenerator<T> {
  let cursor: string | undefined;
  for (let pages = 0; ; ) {
    if (pages >= maxPages) throw new PagingLimitError(`stopped after the hard cap of ${maxPages} pages`);
    const page = await fetchPage(cursor);
    pages++;
    yield* page.data;
    if (!page.has_more) return;
    if (!page.next_cursor) throw new PagingLimitError('has_more is true but next_cursor is null');
    cursor = page.next_cursor;
  }
}
