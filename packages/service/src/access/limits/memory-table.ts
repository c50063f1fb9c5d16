// The maps this process keeps its counters' windows and its locks in. Their keys are chosen by clients (an
// address, and behind proxies trusted by hop count whatever the nearest X-Forwarded-For entry says, up to
// Node's header size), so each map is bounded in bytes, keys included. Past the bound, entries that ended
// go first, then the oldest: a client able to fill a map holds that many addresses, each of which has an
// allowance of its own anyway, so forgetting the oldest gives it nothing the addresses did not.

/** What an entry holds besides its key's characters: its map slot and its small value object. */
export const TABLE_ENTRY_OVERHEAD_BYTES = 160;
/** Bytes one map may hold, keys included (about 20,000 addresses). */
export const DEFAULT_TABLE_BYTES = 4 * 1024 * 1024;

/** The bytes an entry is charged: V8 keeps a string at up to two bytes a character. */
const costOf = (key: string) => TABLE_ENTRY_OVERHEAD_BYTES + 2 * key.length;

/**
 * A copy of `text` that refers to no other string. A string cut from a longer one (an address from an
 * X-Forwarded-For header, a filter id from a URL) or joined from pieces keeps them alive, so a kept key
 * could hold far more than its own characters.
 */
export function ownString(text: string): string {
  const copy = Buffer.from(text, 'utf8').toString('utf8');
  // Only a lone surrogate changes on the way, and no header or URL yields one: then the key stays as it is.
  return copy === text ? copy : text;
}

export class MemoryTable<V> {
  private readonly entries = new Map<string, V>();
  private bytes = 0;

  constructor(
    /** True once an entry is of no more use at clock time `now` (ms). */
    private readonly ended: (value: V, now: number) => boolean,
    private readonly maxBytes: number = DEFAULT_TABLE_BYTES,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** Bytes charged for what the map holds. */
  get held(): number {
    return this.bytes;
  }

  get(key: string): V | undefined {
    return this.entries.get(key);
  }

  /** Sets `key` as the newest entry; past the bound, drops what ended, then the oldest. */
  set(key: string, value: V): void {
    this.delete(key);
    this.entries.set(ownString(key), value);
    this.bytes += costOf(key);
    if (this.bytes > this.maxBytes) this.shrink(Date.now());
  }

  delete(key: string): void {
    if (this.entries.delete(key)) this.bytes -= costOf(key);
  }

  /** Every entry, ended or not (the caller tells them apart). */
  all(): IterableIterator<[string, V]> {
    return this.entries.entries();
  }

  /** Drops every entry that ended. */
  sweep(now: number): void {
    for (const [key, value] of this.entries) if (this.ended(value, now)) this.delete(key);
  }

  /** Down to three quarters of the bound, so that the next sweep is that far away. */
  private shrink(now: number): void {
    this.sweep(now);
    for (const key of this.entries.keys()) {
      if (this.bytes <= (this.maxBytes * 3) / 4) break;
      this.delete(key);
    }
  }
}
