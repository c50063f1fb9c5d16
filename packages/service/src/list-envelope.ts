// The list envelope every paged answer shares (`{"object":"list","data":[...],"has_more":...,"next_cursor":...}`),
// built around stored JSON without parsing it. A cursor is base64url, so it needs no escaping.

/** The envelope around items given as strings. */
export function listJson(items: readonly string[], hasMore: boolean, nextCursor: string | null): string {
  const cursor = nextCursor === null ? 'null' : `"${nextCursor}"`;
  return `{"object":"list","data":[${items.join(',')}],"has_more":${hasMore},"next_cursor":${cursor}}`;
}

const LIST_HEAD = Buffer.from('{"object":"list","data":[');

/**
 * The same envelope around items the database joined already (`items`: comma-separated UTF-8 JSON): one
 * copy of their bytes, no string in between.
 */
export function listBytes(page: { items: Buffer; hasMore: boolean }, nextCursor: string | null): Buffer {
  const cursor = nextCursor === null ? 'null' : `"${nextCursor}"`;
  const tail = Buffer.from(`],"has_more":${page.hasMore},"next_cursor":${cursor}}`);
  return Buffer.concat([LIST_HEAD, page.items, tail], LIST_HEAD.length + page.items.length + tail.length);
}
