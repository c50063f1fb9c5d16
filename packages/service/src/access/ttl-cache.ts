import type { Clock } from '../clock.js';

// A small read-through cache whose entries live `ttlMs` on the injected clock. Concurrent misses of one
// key share a single load. `ttlMs` 0 disables caching.

const MAX_ENTRIES = 10_000;

export class TtlCache<K, V> {
  private readonly entries = new Map<K, { at: number; value: Promise<V> }>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  get(key: K, load: () => Promise<V>): Promise<V> {
    const now = this.clock.now();
    const hit = this.entries.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const value = load();
    if (this.ttlMs > 0) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
      this.entries.set(key, { at: now, value });
      value.catch(() => this.entries.delete(key));
    }
    return value;
  }
}
