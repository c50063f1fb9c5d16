// Leases of a shared counter's window (docs/limits.md, "Leases"). A process takes a slice of a key's window
// from Redis and spends it locally, so a busy key costs Redis one call per slice instead of one per request.
//
// Rules that bound what a key can be allowed:
// - Redis grants a slice only within the limit (`fits`), or while the window is under it (`under`, the quota:
//   the slice that crosses is the request's own need, never more). So the slices of all processes together
//   never exceed what one process counting every request on Redis would allow.
// - A slice is spent only until its window ends: the lease's end is the time the grant was sent plus the
//   window's ttl Redis read when it granted, which is never later than the real end.
// - What a process does not spend goes back to the window it came from, never to a later one.
// So with N processes the most a key gets beyond its limit is what one process gets: nothing for the rate
// window (past the extra charge of a never-paged list), one reservation for the quota. The approximation
// runs the other way: a slice held unspent by one process is missing in the others, at most (N - 1) * S
// items, S = min(limit / LEASE_SHARE, what the holder spent in the last LEASE_MS).

/** A slice covers about this much of the process's recent use of the key, ms. */
export const LEASE_MS = 500;
/** A slice is at most this fraction of the limit (1 / LEASE_SHARE). */
export const LEASE_SHARE = 8;

/** One key's lease in this process. */
export interface Lease {
  /** Which window the lease belongs to: a give-back of another window is dropped. */
  gen: number;
  /** performance.now() at which the window ends (never later than Redis's end). */
  endsAt: number;
  /** Points Redis granted this process in the window. */
  granted: number;
  /** Points spent or set aside by requests in flight. */
  used: number;
  /** The window's total on Redis as last seen (every process's slices), less what this process gave back since. */
  total: number;
  /** Points taken in the current measuring period, and when it began. */
  spent: number;
  periodStart: number;
  /** Points a slice should hold (recent use over LEASE_MS, capped). */
  target: number;
  /** When the lease was last taken from. */
  lastUse: number;
  /** A grant in flight: other takers wait for it instead of asking for a slice of their own. */
  refill?: Promise<unknown> | undefined;
}

let generations = 0;

export class LeaseTable {
  private readonly leases = new Map<string, Lease>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  get size(): number {
    return this.leases.size;
  }

  /** The key's lease, a fresh empty one when its window ended or none was taken. */
  get(key: string, now: number): Lease {
    let lease = this.leases.get(key);
    if (!lease || lease.endsAt <= now) {
      const refill = lease?.refill;
      lease = {
        gen: ++generations,
        endsAt: 0,
        granted: 0,
        used: 0,
        total: 0,
        spent: lease && now - lease.periodStart < 2 * LEASE_MS ? lease.spent : 0,
        periodStart: lease?.periodStart ?? now,
        target: lease?.target ?? 0,
        lastUse: now,
        refill,
      };
      this.leases.set(key, lease);
    }
    return lease;
  }

  /** Points the lease still holds unspent, 0 once its window ended. */
  available(lease: Lease, now: number): number {
    return lease.endsAt > now ? lease.granted - lease.used : 0;
  }

  /** Spends `points` of the lease, and counts them toward the key's recent use. */
  take(lease: Lease, points: number, now: number): void {
    lease.used += points;
    lease.lastUse = now;
    lease.spent += points;
    const elapsed = now - lease.periodStart;
    if (elapsed >= LEASE_MS) {
      const cap = Math.floor(this.limit / LEASE_SHARE);
      lease.target = Math.min(cap, Math.round((lease.spent * LEASE_MS) / elapsed));
      lease.spent = 0;
      lease.periodStart = now;
    }
  }

  /**
   * Adds what Redis granted (`granted` points, the window's `total` after it, its ttl `pttl` read at the
   * grant, sent at `sentAt`) to the key's lease, which it returns. A grant of a later window than the lease's
   * (its end more than half a window away) starts the lease anew: what was spent of the old one stays there.
   */
  grant(key: string, granted: number, total: number, pttl: number, sentAt: number, now: number): Lease {
    const endsAt = sentAt + Math.max(0, pttl);
    let lease = this.get(key, now);
    if (lease.endsAt !== 0 && Math.abs(lease.endsAt - endsAt) > this.windowMs / 2) {
      lease = { ...lease, gen: ++generations, endsAt: 0, granted: 0, used: 0, refill: undefined };
      this.leases.set(key, lease);
    }
    // Of two grants of one window, the earlier end is the safe one.
    lease.endsAt = lease.endsAt === 0 ? endsAt : Math.min(lease.endsAt, endsAt);
    lease.granted += granted;
    lease.total = total;
    return lease;
  }

  /** What the window holds as this process sees it: every slice granted, less what this process holds unspent. */
  consumed(lease: Lease): number {
    return Math.max(0, lease.total - (lease.granted - lease.used));
  }

  /**
   * Points of the lease this process should hand back to Redis now: what it holds unspent beyond its target
   * (all of it when idle since `idleBefore`). Takes them off the lease; 0 when the window ends within `marginMs`.
   */
  surplus(lease: Lease, now: number, marginMs: number, idleBefore = Number.NEGATIVE_INFINITY): number {
    if (lease.endsAt - now <= marginMs) return 0;
    const keep = lease.lastUse < idleBefore ? 0 : lease.target;
    const surplus = lease.granted - lease.used - keep;
    if (surplus <= 0) return 0;
    lease.granted -= surplus;
    lease.total = Math.max(0, lease.total - surplus);
    return surplus;
  }

  /** The leases by key, for the sweep. */
  entries(): IterableIterator<[string, Lease]> {
    return this.leases.entries();
  }

  /** Whether `lease` is still the key's current one. */
  isCurrent(key: string, lease: Lease): boolean {
    return this.leases.get(key) === lease;
  }

  /** The key's current lease if it belongs to window `gen`. */
  ofGen(key: string, gen: number): Lease | undefined {
    const lease = this.leases.get(key);
    return lease && lease.gen === gen ? lease : undefined;
  }

  delete(key: string): void {
    this.leases.delete(key);
  }
}
