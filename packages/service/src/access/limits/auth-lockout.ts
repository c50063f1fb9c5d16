import type { Clock } from '../../clock.js';
import { ApiError } from '../../errors/catalogue.js';
import type { Limits } from '../../limits.js';
import type { CounterStore } from './counter-store.js';
import type { RefusingLock } from './rate-limits.js';
import type { RequestBudget } from './redis-health.js';

// Failed-authentication lockout: `authFailuresPerIp` failures from one address in a minute, or
// `authFailuresPerKey` with one key id, lock that address or key for `authLockSeconds`. The lock fires at
// the failure that reaches the number; its expiry runs on the injected clock.

type LimitsUsed = Pick<Limits, 'authFailuresPerIp' | 'authFailuresPerKey' | 'authLockSeconds'>;

export class AuthLockout {
  private readonly ipFailures;
  private readonly keyFailures;
  private readonly ipLocks;
  private readonly keyLocks;

  /** `name` keeps the counters apart: `auth` for API keys, another name for another credential. */
  constructor(
    counters: CounterStore,
    private readonly limits: LimitsUsed,
    private readonly clock: Clock,
    name = 'auth',
  ) {
    this.ipFailures = counters.counter(`${name}fail:ip`, limits.authFailuresPerIp, 60);
    this.keyFailures = counters.counter(`${name}fail:key`, limits.authFailuresPerKey, 60);
    this.ipLocks = counters.locks(`${name}:ip`);
    this.keyLocks = counters.locks(`${name}:key`);
  }

  /** Seconds a locked address or key is told to wait: always the full lock length (spec rule 1). */
  get retryAfter(): number {
    return this.limits.authLockSeconds;
  }

  /** The address lock of `ip` as a charge checks it, refused as a locked address is. */
  addressLock(ip: string): RefusingLock {
    return {
      locks: this.ipLocks,
      key: ip,
      refusal: () => new ApiError('rate_limited', { retryAfter: this.retryAfter }),
    };
  }

  /** The lock of key `keyId` as a charge checks it (wrong secrets are then refused as a locked key is). */
  keyLock(keyId: string): RefusingLock {
    return {
      locks: this.keyLocks,
      key: keyId,
      refusal: () => new ApiError('rate_limited', { retryAfter: this.retryAfter }),
    };
  }

  async ipLocked(ip: string, budget?: RequestBudget): Promise<boolean> {
    return this.isLocked(await this.ipLocks.lockedUntil(ip, budget));
  }

  async keyLocked(keyId: string, budget?: RequestBudget): Promise<boolean> {
    return this.isLocked(await this.keyLocks.lockedUntil(keyId, budget));
  }

  /** Counts one failure from `ip` (and against `keyId` when the key id exists) and locks at the threshold. */
  async recordFailure(
    ip: string,
    { keyId, budget }: { keyId?: string | undefined; budget?: RequestBudget } = {},
  ): Promise<void> {
    await this.count(this.ipFailures, this.ipLocks, ip, this.limits.authFailuresPerIp, budget);
    if (keyId !== undefined) {
      await this.count(this.keyFailures, this.keyLocks, keyId, this.limits.authFailuresPerKey, budget);
    }
  }

  /** Failures counted in the current minute with this key id, and whether it is locked (for `admin usage`). */
  async keyStatus(keyId: string): Promise<{ failures: number; lockedUntil: string | null }> {
    const until = await this.keyLocks.lockedUntil(keyId);
    return {
      failures: await this.keyFailures.peek(keyId),
      lockedUntil: this.isLocked(until) ? new Date(until!).toISOString() : null,
    };
  }

  /** The addresses locked now and when each lock ends, soonest end first (the operators' list, manage/). */
  async lockedAddresses(): Promise<{ address: string; lockedUntil: string }[]> {
    const held = await this.ipLocks.held(this.clock.now());
    return held
      .sort((a, b) => a.untilMs - b.untilMs || a.key.localeCompare(b.key))
      .map(({ key, untilMs }) => ({ address: key, lockedUntil: new Date(untilMs).toISOString() }));
  }

  /** Ends the lockout of key `keyId` and forgets its failures (the operator's unlock, manage/). */
  async unlockKey(keyId: string): Promise<void> {
    // A lock that ends now no longer holds: `lock` replaces the end time wherever the lock is kept.
    await this.keyLocks.lock(keyId, this.clock.now(), 1);
    await this.keyFailures.reset(keyId);
  }

  /** Ends the lockout of address `ip` and forgets its failures. */
  async unlockAddress(ip: string): Promise<void> {
    await this.ipLocks.lock(ip, this.clock.now(), 1);
    await this.ipFailures.reset(ip);
  }

  private isLocked(until: number | null): boolean {
    return until !== null && this.clock.now() < until;
  }

  private async count(
    failures: ReturnType<CounterStore['counter']>,
    locks: ReturnType<CounterStore['locks']>,
    key: string,
    threshold: number,
    budget: RequestBudget | undefined,
  ): Promise<void> {
    const { consumed } = await failures.add(key, 1, budget);
    if (consumed < threshold) return;
    const lockMs = this.limits.authLockSeconds * 1000;
    await locks.lock(key, this.clock.now() + lockMs, lockMs, budget);
    // The lock replaces the count: once it ends, the address or key starts from zero.
    await failures.reset(key, budget);
  }
}
