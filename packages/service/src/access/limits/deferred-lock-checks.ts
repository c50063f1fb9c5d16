import type { Clock } from '../../clock.js';
import type { DeferredLocks, RequestBudget } from '../access-control.js';
import type { AuthLockout } from './auth-lockout.js';
import type { CounterStore } from './counter-store.js';
import type { FirewallBudget } from './firewall-budget.js';
import type { RefusingLock } from './rate-limits.js';

// The lock checks a request leaves to its charge (DeferredLocks in access-control.ts): which are pending,
// checking them in one round trip with any other locks, and recording what each check found.

/** A pending lock of a request, by its name in `DeferredLocks`. */
export interface PendingLock {
  name: 'firewall' | 'address';
  lock: RefusingLock;
}

export class DeferredLockChecks {
  constructor(
    private readonly counters: CounterStore,
    private readonly clock: Clock,
    private readonly firewall: FirewallBudget,
    private readonly lockout: AuthLockout,
  ) {}

  /** The pending locks of `deferred`, in the order of the checks. */
  pending(deferred: DeferredLocks | undefined): PendingLock[] {
    const pending: PendingLock[] = [];
    if (deferred?.firewall === 'pending') pending.push({ name: 'firewall', lock: this.firewall.block(deferred.ip) });
    if (deferred?.address === 'pending') pending.push({ name: 'address', lock: this.lockout.addressLock(deferred.ip) });
    return pending;
  }

  /** Records a check of the pending locks: those before the one that holds are clear, those after it moot. */
  record(deferred: DeferredLocks, pending: readonly PendingLock[], held: number): void {
    for (const [i, { name }] of pending.entries()) {
      if (held < 0 || i < held) deferred[name] = 'clear';
      else if (i === held) deferred[name] = 'held';
      else delete deferred[name];
    }
  }

  /**
   * Checks the pending locks of `deferred`, then `extra`, in one round trip: throws the refusal of a pending
   * lock that holds, else returns the index in `extra` of the first that holds (-1 when none does).
   */
  async check(
    deferred: DeferredLocks | undefined,
    budget: RequestBudget | undefined,
    extra: readonly RefusingLock[] = [],
  ): Promise<number> {
    const pending = this.pending(deferred);
    if (pending.length === 0 && extra.length === 0) return -1;
    const charged = await this.counters.charge([...pending.map((p) => p.lock), ...extra], this.clock.now(), [], budget);
    const held = !charged.ok && 'lock' in charged ? charged.lock : -1;
    if (deferred) this.record(deferred, pending, held);
    if (held >= 0 && held < pending.length) throw (pending[held] as PendingLock).lock.refusal();
    return held < 0 ? -1 : held - pending.length;
  }
}
