import type { Charged, ChargeStep, Window } from './counter-store.js';
import { LEASE_MS, type Lease, LeaseTable } from './lease-table.js';
import type { RedisHealth, RequestBudget } from './redis-health.js';
import type { LeaseAnswer, LimitScripts } from './redis-scripts.js';

// Charges served from leases (lease-table.ts): a step the process's lease of the key covers is taken locally;
// the others ask Redis for a slice in one script, which also checks the locks when the lock mirror is not
// live. A busy key thus costs Redis one script per slice, not per request (docs/limits.md, "Leases").

/** A leased counter: its leases, its limit and window, and its key on Redis. */
export interface LeasedCounter {
  leases: LeaseTable;
  key(key: string): string;
  limit: number;
  seconds: number;
}

/** A step of a charge over a leased counter. */
export interface LeasedStep {
  counter: LeasedCounter;
  id: string;
  rule: ChargeStep['rule'];
  points: number;
}

/** A give-back or extra charge of a leased step, for the window (`lease`) its charge took from. */
export interface LeasedAdjustment {
  counter: LeasedCounter;
  id: string;
  points: number;
  lease: number;
}

export class LeasedCharges {
  private readonly counters = new Set<LeasedCounter>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly scripts: LimitScripts,
    private readonly health: RedisHealth,
    /**
     * Within this many ms of its window's end a lease hands nothing back (the window is about to end anyway, and
     * a return must land before it does). A lease is spent until its end: that end is never later than Redis's.
     */
    private readonly marginMs: number,
  ) {}

  /** A counter of `limit` points per window of `seconds`, whose windows are leased. */
  counter(key: (key: string) => string, limit: number, seconds: number): LeasedCounter {
    const counter = { leases: new LeaseTable(limit, seconds * 1000), key, limit, seconds };
    this.counters.add(counter);
    return counter;
  }

  /**
   * Takes every step from its lease, or asks Redis for a slice for those the lease does not cover, all or
   * nothing. `lockKeys`: locks Redis checks first (none when the lock mirror answered). `inMemory`: the charge
   * on this process's memory, should Redis fail.
   */
  async charge(
    lockKeys: readonly string[],
    now: number,
    steps: readonly LeasedStep[],
    budget: RequestBudget | undefined,
    inMemory: () => Charged,
  ): Promise<Charged> {
    this.startSweeping();
    const served = this.fromLeases(lockKeys, steps);
    if (served) return served;
    for (let attempt = 0; ; attempt++) {
      const t = performance.now();
      const leases = steps.map((s) => s.counter.leases.get(s.id, t));
      // A slice on its way to a lease this charge needs: wait for it rather than ask for another.
      const waiting = leases.filter((l, i) => l.refill && !this.covers(steps[i] as LeasedStep, l, t));
      if (waiting.length > 0 && attempt < 3) {
        await Promise.all(waiting.map((l) => l.refill));
        continue;
      }
      // What the leases cover is set aside now, and put back if Redis refuses the rest.
      const local = steps.map((s, i) => this.covers(s, leases[i] as Lease, t));
      for (const [i, s] of steps.entries())
        if (local[i] && s.rule !== 'read') s.counter.leases.take(leases[i] as Lease, s.points, t);
      if (lockKeys.length === 0 && local.every(Boolean))
        return { ok: true, on: 'redis', windows: this.windows(steps, leases, t) };
      const undo = () => {
        for (const [i, s] of steps.entries()) {
          const lease = leases[i] as Lease;
          if (local[i] && s.rule !== 'read' && s.counter.leases.isCurrent(s.id, lease)) lease.used -= s.points;
        }
      };
      const asked = steps.map((s, i) => {
        const need = local[i] || s.rule === 'read' ? 0 : s.points;
        return {
          key: s.counter.key(s.id),
          rule: s.rule,
          need,
          ask: need > 0 ? need + (leases[i] as Lease).target : 0,
          limit: s.counter.limit,
          seconds: s.counter.seconds,
        };
      });
      const sentAt = performance.now();
      const call = this.health.run<{ answer: LeaseAnswer } | { fallback: true }>(
        async () => ({ answer: await this.scripts.lease(lockKeys, now, asked) }),
        async () => ({ fallback: true }),
        budget,
      );
      for (const [i, lease] of leases.entries()) if (!local[i]) lease.refill = call;
      const result = await call;
      for (const lease of leases) if (lease.refill === call) lease.refill = undefined;
      if ('fallback' in result) {
        undo();
        return inMemory();
      }
      const { answer } = result;
      if (answer.kind === 'lock') {
        undo();
        return { ok: false, lock: answer.index };
      }
      if (answer.kind === 'refused') {
        undo();
        return { ok: false, step: answer.index, msBeforeNext: answer.msBeforeNext };
      }
      const at = performance.now();
      const after = steps.map((s, i) => {
        const grant = answer.grants[i] as { granted: number; consumed: number; pttl: number };
        if (local[i]) return leases[i] as Lease;
        if (asked[i]?.need === 0) {
          // A window read: what Redis holds, as this lease's view when it has none of its own.
          const lease = s.counter.leases.get(s.id, at);
          if (lease.endsAt === 0)
            return { ...lease, total: grant.consumed, endsAt: grant.pttl < 0 ? 0 : sentAt + grant.pttl };
          return lease;
        }
        const lease = s.counter.leases.grant(s.id, grant.granted, grant.consumed, grant.pttl, sentAt, at);
        s.counter.leases.take(lease, s.points, at);
        return lease;
      });
      return { ok: true, on: 'redis', windows: this.windows(steps, after, at) };
    }
  }

  /**
   * Gives back (negative points) or charges (positive) what a settled request did not use or used beyond its
   * reservation, in the lease of the window it took from: the surplus over the lease's target goes back to
   * Redis, an extra beyond the lease is added there, both sent without waiting. A give-back for a window that
   * ended is dropped; an extra for one is added to the window Redis has now, as with a single process.
   */
  adjust(changes: readonly LeasedAdjustment[], budget: RequestBudget | undefined): void {
    const now = performance.now();
    const returned: { key: string; points: number; maxTtlMs: number }[] = [];
    const added: { key: string; points: number; seconds: number }[] = [];
    for (const c of changes) {
      const { leases } = c.counter;
      const lease = leases.ofGen(c.id, c.lease);
      if (!lease || lease.endsAt <= now) {
        if (c.points > 0) added.push({ key: c.counter.key(c.id), points: c.points, seconds: c.counter.seconds });
        continue;
      }
      lease.used = Math.max(0, lease.used + c.points);
      if (c.points < 0) {
        const surplus = leases.surplus(lease, now, this.marginMs);
        if (surplus > 0) returned.push(this.returnOf(c.counter, c.id, lease, surplus, now));
      } else if (lease.used > lease.granted) {
        const over = lease.used - lease.granted;
        lease.granted += over;
        lease.total += over;
        added.push({ key: c.counter.key(c.id), points: over, seconds: c.counter.seconds });
      }
    }
    this.send(returned, added, budget);
  }

  /** Stops the sweep. */
  close(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** The charge when every step's lease covers it and no lock is left to Redis (the common case), else undefined. */
  private fromLeases(lockKeys: readonly string[], steps: readonly LeasedStep[]): Charged | undefined {
    if (lockKeys.length > 0) return undefined;
    const t = performance.now();
    const leases: Lease[] = [];
    for (const s of steps) {
      const lease = s.counter.leases.get(s.id, t);
      if (!this.covers(s, lease, t)) return undefined;
      leases.push(lease);
    }
    for (const [i, s] of steps.entries()) if (s.rule !== 'read') s.counter.leases.take(leases[i] as Lease, s.points, t);
    return { ok: true, on: 'redis', windows: this.windows(steps, leases, t) };
  }

  /** Whether the lease covers the step now (a window read: whether the lease knows its window). */
  private covers(step: LeasedStep, lease: Lease, now: number): boolean {
    const { leases, limit } = step.counter;
    if (step.rule === 'read') return lease.endsAt > now;
    if (step.points === 0) return step.rule === 'under' && lease.endsAt > now && lease.total < limit;
    return leases.available(lease, now) >= step.points;
  }

  private windows(steps: readonly LeasedStep[], leases: readonly Lease[], now: number): Window[] {
    return steps.map((s, i) => {
      const lease = leases[i] as Lease;
      return {
        consumed: s.counter.leases.consumed(lease),
        msBeforeNext: lease.endsAt > now ? lease.endsAt - now : null,
        lease: lease.gen,
      } as Window;
    });
  }

  private returnOf(counter: LeasedCounter, id: string, lease: Lease, points: number, now: number) {
    // The window Redis holds may end a little later than the lease's end; a later window has a ttl longer by
    // at least a window, so half a window tells them apart.
    return { key: counter.key(id), points, maxTtlMs: lease.endsAt - now + (counter.seconds * 1000) / 2 };
  }

  private send(
    returned: { key: string; points: number; maxTtlMs: number }[],
    added: { key: string; points: number; seconds: number }[],
    budget: RequestBudget | undefined,
  ): void {
    // While Redis is away nothing is sent: points handed back are then dropped (Redis keeps them until the
    // window ends) and extras are not counted, as a give-back and an extra charge of a Redis charge would be.
    if (returned.length > 0) {
      this.health.send(
        () => this.scripts.giveBackLeased(returned),
        async () => undefined,
        budget,
      );
    }
    if (added.length > 0) {
      this.health.send(
        () => this.scripts.adjust(added),
        async () => undefined,
        budget,
      );
    }
  }

  /** Every LEASE_MS: leases idle that long hand back what they hold; leases of ended windows are forgotten. */
  private startSweeping(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => this.sweep(), LEASE_MS);
    this.sweeper.unref();
  }

  private sweep(): void {
    if (!this.health.up) return;
    const now = performance.now();
    const returned: { key: string; points: number; maxTtlMs: number }[] = [];
    for (const counter of this.counters) {
      for (const [id, lease] of counter.leases.entries()) {
        if (lease.endsAt !== 0 && lease.endsAt <= now && !lease.refill) {
          counter.leases.delete(id);
          continue;
        }
        const surplus = counter.leases.surplus(lease, now, this.marginMs, now - LEASE_MS);
        if (surplus > 0) returned.push(this.returnOf(counter, id, lease, surplus, now));
        else if (lease.endsAt === 0 && !lease.refill && lease.lastUse < now - LEASE_MS) counter.leases.delete(id);
      }
    }
    this.send(returned, [], undefined);
  }
}
