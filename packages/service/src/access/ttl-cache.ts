import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock.js';

// A read-through cache over lru-cache: each entry expires `ttlMs` after it was loaded, on the injected
// clock; concurrent misses of one key share a single load; a failed load is not kept; past
// `MAX_ENTRIES` the least recently used entry goes (not the whole cache). An entry is used while it is
// younger than `ttlMs`; lru-cache keeps one until it is older than its whole-millisecond `ttl`, hence
// `ttlMs - 1`, and a `ttlMs` of 0 or 1 disables caching.

// Its keys are lookup ids (of fixed length, checked first), teams of stored integrations and settings names,
// and its values stored records: 10,000 entries bound what clients can make it hold.
const MAX_ENTRIES = 10_000;

/** lru-cache keeps no `undefined` values, and "no such key" is an answer worth caching: box every value. */
interface Box<V> {
  value: V;
}

export class TtlCache<K extends string, V> {
  private readonly cache: LRUCache<K, Box<V>, () => Promise<V>> | undefined;

  constructor(clock: Clock, ttlMs: number) {
    this.cache =
      ttlMs > 1
        ? new LRUCache<K, Box<V>, () => Promise<V>>({
            max: MAX_ENTRIES,
            ttl: Math.ceil(ttlMs) - 1,
            // Expiry is read from the clock on every lookup, so tests can move time by hand.
            ttlResolution: 0,
            perf: { now: () => clock.now() },
            fetchMethod: async (_key, _stale, { context: load }) => ({ value: await load() }),
          })
        : undefined;
  }

  async get(key: K, load: () => Promise<V>): Promise<V> {
    if (!this.cache) return load();
    // A fresh entry straight from the map; `fetch` (misses, expired entries, loads in flight) costs more.
    const fresh = this.cache.get(key);
    if (fresh) return fresh.value;
    const box = await this.cache.fetch(key, { context: load });
    return (box as Box<V>).value;
  }
}
