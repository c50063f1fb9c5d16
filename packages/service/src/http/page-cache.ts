import { ownString } from '../access/limits/memory-table.js';

// Finished list pages, kept as bytes and reused while the team's feed head has not moved.
//
// Why this is exact: every change to a record a paged list serves (lead, call, conversation, booking,
// board) appends to its team's feed in the same transaction (write/events/publish.ts), so a page read when
// the head was H is byte for byte the page any later request gets while the head is still H. The head
// is read *before* the rows: a write that commits in between leaves the page stamped with an older
// head, which the next request sees as moved (a miss), never the other way round.
//
// Bounded in bytes, least recently used first out, and an entry is charged everything it holds: its
// key (a filter id has no length limit, so a key can be far larger than its page), its body and a fixed
// cost for the map slot and objects, so empty pages under distinct keys fill the budget like any other.

interface Entry {
  head: number;
  body: Buffer;
  items: number;
  /** Bytes charged against the budget (`entryCost`). */
  cost: number;
}

/** What an entry holds besides its key's characters and its body's bytes: the map slot and three objects. */
export const ENTRY_OVERHEAD_BYTES = 512;

/** The bytes an entry is charged: V8 keeps a string at up to two bytes a character. */
export function entryCost(key: string, body: Buffer): number {
  return ENTRY_OVERHEAD_BYTES + 2 * key.length + body.length;
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
      this.bytes -= entry.cost;
      this.stats.misses++;
      return undefined;
    }
    this.entries.set(key, entry); // most recently used last
    this.stats.hits++;
    this.stats.hitBytes += entry.body.length;
    return entry;
  }

  set(key: string, head: number, body: Buffer, items: number): void {
    const cost = entryCost(key, body);
    if (cost > this.maxBytes / 4) return;
    const previous = this.entries.get(key);
    if (previous) {
      this.entries.delete(key);
      this.bytes -= previous.cost;
    }
    this.entries.set(ownString(key), { head, body: ownBytes(body), items, cost });
    this.bytes += cost;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.cost;
    }
  }

  /** Bytes charged for what the cache holds (for tests and metrics). */
  get size(): number {
    return this.bytes;
  }
}

/**
 * A small Buffer is a view into an 8 KiB slab that Node shares between allocations: keeping the view keeps
 * the slab. A page kept for long gets its own memory, so the bytes charged are the bytes held.
 */
function ownBytes(body: Buffer): Buffer {
  if (body.byteOffset === 0 && body.buffer.byteLength === body.length) return body;
  const own = Buffer.allocUnsafeSlow(body.length);
  body.copy(own);
  return own;
}

/** Default budget: 32 MiB of finished pages per process. */
export const DEFAULT_PAGE_CACHE_BYTES = 32 * 1024 * 1024;
