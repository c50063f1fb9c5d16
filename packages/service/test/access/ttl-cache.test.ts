import { describe, expect, it } from 'vitest';
import { TtlCache } from '../../src/access/ttl-cache.js';
import { ManualClock } from '../../src/clock.js';

// The cache in front of key, team and switch lookups: revocation must take effect within its TTL.

describe('key cache', () => {
  it('each entry expires its own TTL after it was loaded (revocation takes effect within the TTL)', async () => {
    const clock = new ManualClock();
    const cache = new TtlCache<string, number>(clock, 1000);
    let loads = 0;
    const load = async () => ++loads;
    expect(await cache.get('a', load)).toBe(1);
    clock.advance(600);
    expect(await cache.get('b', load)).toBe(2);
    clock.advance(399);
    expect(await cache.get('a', load)).toBe(1); // 999 ms old: still cached
    clock.advance(1);
    expect(await cache.get('a', load)).toBe(3); // 1000 ms old: loaded again
    expect(await cache.get('b', load)).toBe(2); // 400 ms old: untouched by a's expiry
  });

  it('concurrent misses of one key share a single load', async () => {
    const cache = new TtlCache<string, string>(new ManualClock(), 1000);
    let loads = 0;
    let release: (v: string) => void = () => undefined;
    const load = () => {
      loads++;
      return new Promise<string>((resolve) => {
        release = resolve;
      });
    };
    const all = Promise.all([cache.get('k', load), cache.get('k', load), cache.get('k', load)]);
    release('v');
    expect(await all).toEqual(['v', 'v', 'v']);
    expect(loads).toBe(1);
  });

  it('an unknown key (undefined) is cached like any answer; a failed load is not kept', async () => {
    const cache = new TtlCache<string, string | undefined>(new ManualClock(), 1000);
    let loads = 0;
    const unknown = async () => {
      loads++;
      return undefined;
    };
    const known = async () => {
      loads++;
      return 'x';
    };
    expect(await cache.get('missing', unknown)).toBeUndefined();
    expect(await cache.get('missing', known)).toBeUndefined();
    expect(loads).toBe(1);
    await expect(cache.get('flaky', async () => Promise.reject(new Error('database away')))).rejects.toThrow(
      'database away',
    );
    expect(await cache.get('flaky', async () => 'back')).toBe('back');
  });

  it('past 10,000 keys only the least recently used entries are dropped, not the whole cache', async () => {
    const clock = new ManualClock();
    const cache = new TtlCache<string, number>(clock, 60_000);
    let loads = 0;
    const load = async () => ++loads;
    await cache.get('hot', load);
    for (let i = 0; i < 10_000; i++) {
      if (i % 1000 === 0) await cache.get('hot', load); // keep it recently used
      await cache.get(`k${i}`, load);
    }
    const before = loads;
    expect(await cache.get('hot', load)).toBe(1);
    expect(await cache.get('k9999', load)).toBe(before);
    expect(loads).toBe(before);
    await cache.get('k0', load); // the oldest entry was evicted
    expect(loads).toBe(before + 1);
  });

  it('a TTL of 0 disables caching', async () => {
    const cache = new TtlCache<string, number>(new ManualClock(), 0);
    let loads = 0;
    await cache.get('a', async () => ++loads);
    expect(await cache.get('a', async () => ++loads)).toBe(2);
  });
});
