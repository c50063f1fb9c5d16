import type { Clock } from '../../clock.js';
import type { Limits } from '../../limits.js';
import { FirewallBlockedError } from '../access-control.js';
import type { CounterStore } from './counter-store.js';
import type { RefusingLock } from './rate-limits.js';
import type { RequestBudget } from './redis-health.js';

// The firewall's budget: more than `firewallRequestsPerMinute` requests a minute from one address without a
// well-formed key block that address (every request, plain 429) for `firewallLockSeconds`.

export class FirewallBudget {
  private readonly requests;
  private readonly blocks;

  constructor(
    counters: CounterStore,
    private readonly limits: Pick<Limits, 'firewallRequestsPerMinute' | 'firewallLockSeconds'>,
    private readonly clock: Clock,
  ) {
    this.requests = counters.counter('firewall', limits.firewallRequestsPerMinute, 60);
    this.blocks = counters.locks('firewall');
  }

  /** The block of `ip` as a charge checks it: while it holds, the firewall answers. */
  block(ip: string): RefusingLock {
    return { locks: this.blocks, key: ip, refusal: () => new FirewallBlockedError() };
  }

  async blocked(ip: string, hasWellFormedKey: boolean, budget?: RequestBudget): Promise<boolean> {
    const until = await this.blocks.lockedUntil(ip, budget);
    if (until !== null && this.clock.now() < until) return true;
    if (hasWellFormedKey) return false;
    const { consumed } = await this.requests.add(ip, 1, budget);
    if (consumed <= this.limits.firewallRequestsPerMinute) return false;
    const lockMs = this.limits.firewallLockSeconds * 1000;
    await this.blocks.lock(ip, this.clock.now() + lockMs, lockMs, budget);
    await this.requests.reset(ip, budget);
    return true;
  }
}
