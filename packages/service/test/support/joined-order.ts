import type { Store } from '../../src/store/store.js';

/**
 * Runs `read` while the store's first statement answers as if the database had joined a page out of
 * position order (SQLite does not promise an aggregate's input order): its reported order steps back and
 * its bytes are wrong. Returns what `read` returned and the texts of the statements the store ran.
 */
export async function withFirstPageOutOfOrder<T>(
  store: Store,
  read: () => Promise<T>,
): Promise<{ value: T; texts: string[] }> {
  const inner = store as unknown as { all(text: string, values?: unknown[]): Promise<Record<string, unknown>[]> };
  const all = inner.all.bind(store);
  const texts: string[] = [];
  inner.all = async (text, values) => {
    texts.push(text);
    const found = await all(text, values);
    const first = found[0];
    return texts.length === 1 && first ? [{ ...first, joined_order: '9,3', items: Buffer.from('{}') }] : found;
  };
  try {
    return { value: await read(), texts };
  } finally {
    inner.all = all;
  }
}
