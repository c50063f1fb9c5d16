import { type Counter, keeps, takenOn, type Window } from './counter-store.js';
import { MemoryTable } from './memory-table.js';

/**
 * Fixed windows of one counter in this process's memory, as rate-limiter-flexible's memory limiter keeps
 * them (a window opens with the first points and lasts `seconds` of real time), but without a promise per
 * operation: every request's charge takes several, and those promises were a large share of a cached page
 * (docs/performance.md). Ended windows are dropped when read, and swept as the map doubles; the map is
 * bounded in bytes (memory-table.ts).
 */
export class MemoryWindows {
  private readonly open = new MemoryTable<{ points: number; endsAt: number }>((window, now) => window.endsAt <= now);
  private sweepAt = 1024;

  constructor(private readonly seconds: number) {}

  /** Adds `points` (negative to give back) to the key's window, opening one when none is open. */
  add(key: string, points: number): { consumed: number; msBeforeNext: number } {
    const now = Date.now();
    let window = this.open.get(key);
    if (!window || window.endsAt <= now) {
      window = { points: 0, endsAt: now + this.seconds * 1000 };
      this.open.set(key, window);
      if (this.open.size >= this.sweepAt) this.sweep(now);
    }
    window.points += points;
    return { consumed: window.points, msBeforeNext: window.endsAt - now };
  }

  /** The key's open window, if any. */
  get(key: string): { consumed: number; msBeforeNext: number } | undefined {
    const window = this.open.get(key);
    const now = Date.now();
    if (!window || window.endsAt <= now) return undefined;
    return { consumed: window.points, msBeforeNext: window.endsAt - now };
  }

  delete(key: string): void {
    this.open.delete(key);
  }

  private sweep(now: number): void {
    this.open.sweep(now);
    this.sweepAt = Math.max(1024, 2 * this.open.size);
  }
}

/** The counter operations over memory windows, synchronous; every one is at most two adds. */
export function memoryOps(windows: MemoryWindows, limit: number) {
  const rule = keeps(limit);
  const giveBack = (key: string, points: number) => {
    if (points <= 0) return;
    const { consumed } = windows.add(key, -points);
    // The window may have ended between take and give-back: a new window must not start in credit.
    if (consumed < 0) windows.add(key, -consumed);
  };
  const takeIf = (key: string, points: number, fits: (before: number, after: number) => boolean) => {
    const { consumed, msBeforeNext } = windows.add(key, points);
    if (fits(consumed - points, consumed)) return { ok: true as const, consumed, msBeforeNext };
    giveBack(key, points);
    return { ok: false as const, msBeforeNext };
  };
  return {
    add: (key: string, points: number) => windows.add(key, points),
    giveBack,
    take: (key: string, points: number) => takeIf(key, points, rule.fits),
    takeWhileUnder: (key: string, points: number) => takeIf(key, points, rule.under),
    peek: (key: string) => Math.max(windows.get(key)?.consumed ?? 0, 0),
    window(key: string): Window {
      const open = windows.get(key);
      return open
        ? { consumed: Math.max(open.consumed, 0), msBeforeNext: open.msBeforeNext }
        : { consumed: 0, msBeforeNext: null };
    },
    reset: (key: string) => windows.delete(key),
  };
}

export type MemoryOps = ReturnType<typeof memoryOps>;

/** A counter of this process's memory alone (no Redis configured). */
export function memoryCounter(m: MemoryOps): Counter {
  return {
    add: async (key, points) => m.add(key, points),
    take: async (key, points) => takenOn('memory')(m.take(key, points)),
    takeWhileUnder: async (key, points) => takenOn('memory')(m.takeWhileUnder(key, points)),
    giveBack: async (key, points) => m.giveBack(key, points),
    peek: async (key) => m.peek(key),
    window: async (key) => m.window(key),
    reset: async (key) => m.reset(key),
  };
}
