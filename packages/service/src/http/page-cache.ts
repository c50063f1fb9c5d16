// Finished list pages, kept as bytes and reused while the team's feed head has not moved.
//
// Why this is exact: every change to a record a paged list serves (lead, call, conversation, booking,
// board) appends to its team's feed in the same transaction (write/publish.ts), so a page read when
// the head was H is byte for byte the page any later request gets while the head is still H. The head
// is read *before* the rows: a write that commits in between leaves the page stamped with an older
// head, which the next request sees as moved (a miss), never the other way round. Bounded in bytes,
// least recently used first out, so memory stays flat however large the data.

interface Entry {
  head: number;
  body: Buffer;
  items: number;
}

export class PageCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  /** Lookups since start (the metrics read them when scraped). */
  readonly stats = { hits: 0, misses: 0, hitBytes: 0 };

  constructor(private readonly maxBytes: number) {}

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  /** The page stored under `key` if it was read at feed head `head`. */
  get(key: string, head: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (!entry) {
      this.stats.misses++;
      return undefined;
    }
    this.entries.delete(key);
    if (entry.head !== head) {
      this.bytes -= entry.body.length;
      this.stats.misses++;
      return undefined;
    }
    this.entries.set(key, entry); // most recently used last
    this.stats.hits++;
    this.stats.hitBytes += entry.body.length;
    return entry;
  }

  set(key: string, head: number, body: Buffer, items: number): void {
    if (body.length > this.maxBytes / 4) return;
    const previous = this.entries.get(key);
    if (previous) {
      this.entries.delete(key);
      this.bytes -= previous.body.length;
    }
    this.entries.set(key, { head, body, items });
    this.bytes += body.length;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.body.length;
    }
  }

  /** Bytes held (for tests and metrics). */
  get size(): number {
    return this.bytes;
  }
}

/** Default budget: 32 MiB of finished pages per process. */
export const DEFAULT_PAGE_CACHE_BYTES = 32 * 1024 * 1024;
