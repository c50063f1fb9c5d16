import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createCounterStore } from '../../src/access/limits/create-counter-store.js';
import { DEFAULT_TABLE_BYTES } from '../../src/access/limits/memory-table.js';

// The counters of the embedded default live in this process's memory, in fixed windows of real time: a
// window opens with the first points and lasts the counter's seconds. These are the rules the limits and the
// budget headers are built on (docs/limits.md).

describe('memory counters', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.parse('2026-11-24T12:00:00Z'));
  });
  afterEach(() => vi.useRealTimers());

  it('a window opens with the first take and lasts the counter seconds; after it the next take starts from zero', async () => {
    const counter = createCounterStore({}).counter('items', 10, 60);
    expect(await counter.take('prn_A', 6)).toEqual({ ok: true, on: 'memory', consumed: 6, msBeforeNext: 60_000 });
    vi.advanceTimersByTime(59_000);
    expect(await counter.take('prn_A', 5)).toEqual({ ok: false, msBeforeNext: 1_000 });
    expect(await counter.window('prn_A')).toEqual({ consumed: 6, msBeforeNext: 1_000 });
    vi.advanceTimersByTime(1_000);
    expect(await counter.window('prn_A')).toEqual({ consumed: 0, msBeforeNext: null });
    expect(await counter.take('prn_A', 5)).toEqual({ ok: true, on: 'memory', consumed: 5, msBeforeNext: 60_000 });
  });

  it('a refused take keeps nothing; takeWhileUnder passes while the window held less than the limit before it', async () => {
    const counter = createCounterStore({}).counter('quota', 10, 60);
    await counter.take('k', 9);
    expect((await counter.take('k', 2)).ok).toBe(false);
    expect(await counter.peek('k')).toBe(9);
    expect(await counter.takeWhileUnder('k', 5)).toMatchObject({ ok: true, consumed: 14 });
    expect((await counter.takeWhileUnder('k', 1)).ok).toBe(false);
    expect(await counter.peek('k')).toBe(14);
  });

  it('a give-back after its window ended does not start the next window in credit', async () => {
    const counter = createCounterStore({}).counter('items', 10, 60);
    await counter.take('k', 10);
    vi.advanceTimersByTime(60_000);
    await counter.giveBack('k', 10, 'memory');
    expect(await counter.peek('k')).toBe(0);
    expect((await counter.take('k', 11)).ok).toBe(false);
    expect((await counter.take('k', 10)).ok).toBe(true);
  });

  it('a charge is all or nothing: a refused step gives back the steps before it, a held lock takes nothing', async () => {
    const store = createCounterStore({});
    const quota = store.counter('quota', 100, 60);
    const items = store.counter('items', 10, 60);
    const locks = store.locks('auth:ip');
    const steps = (points: number) => [
      { counter: quota, key: 'k', points, rule: 'under' as const },
      { counter: items, key: 'k', points, rule: 'fits' as const },
    ];
    expect(await store.charge([], Date.now(), steps(11))).toEqual({ ok: false, step: 1, msBeforeNext: 60_000 });
    expect([await quota.peek('k'), await items.peek('k')]).toEqual([0, 0]);
    await locks.lock('1.2.3.4', Date.now() + 5_000, 5_000);
    expect(await store.charge([{ locks, key: '1.2.3.4' }], Date.now(), steps(1))).toEqual({ ok: false, lock: 0 });
    expect(await quota.peek('k')).toBe(0);
    vi.advanceTimersByTime(5_000);
    expect(await store.charge([{ locks, key: '1.2.3.4' }], Date.now(), steps(4))).toEqual({
      ok: true,
      on: 'memory',
      // The refused charge 5 s earlier opened both windows (with nothing kept in them).
      windows: [
        { consumed: 4, msBeforeNext: 55_000 },
        { consumed: 4, msBeforeNext: 55_000 },
      ],
    });
  });

  it('windows and locks of client addresses stay within their byte bound, keys included: ended ones go first, then the oldest', async () => {
    const store = createCounterStore({});
    const firewall = store.counter('firewall', 300, 60);
    const locks = store.locks('firewall');
    // Behind proxies trusted by hop count, an address is whatever the nearest X-Forwarded-For entry says.
    const address = (name: string, i: number) => `${name}${i}:${'f'.repeat(4_000)}`;
    const fill = async (name: string, count: number) => {
      for (let i = 0; i < count; i++) {
        await firewall.add(address(name, i), 1);
        await locks.lock(address(name, i), Date.now() + 600_000, 60_000);
      }
    };
    // Each fill is 0.6 of the bound: the ended ones go, and no newer one has to.
    const part = Math.ceil((0.6 * DEFAULT_TABLE_BYTES) / (2 * 4_000));
    await fill('ended', part);
    vi.advanceTimersByTime(60_000);
    await fill('live', part);
    expect(await firewall.peek(address('ended', part - 1))).toBe(0);
    expect(await firewall.peek(address('live', 0))).toBe(1);
    expect(await locks.lockedUntil(address('live', 0))).not.toBeNull();
    // Over twice the bound's worth more: the oldest live ones go too, the newest stay.
    await fill('more', 4 * part);
    expect(await firewall.peek(address('live', 0))).toBe(0);
    expect(await locks.lockedUntil(address('live', 0))).toBeNull();
    expect(await firewall.peek(address('more', 4 * part - 1))).toBe(1);
    expect(await locks.lockedUntil(address('more', 4 * part - 1))).not.toBeNull();
  });
});
