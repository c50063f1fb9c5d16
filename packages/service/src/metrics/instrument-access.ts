import {
  type AccessControl,
  type DeferredLocks,
  FirewallBlockedError,
  type RequestBudget,
} from '../access/access-control.js';
import { ApiError } from '../errors/catalogue.js';
import type { Metrics } from './metrics.js';

// Counts the decisions of the limiters (metrics.ts, limiter_decisions_total) by wrapping the access control
// the HTTP layer calls: the firewall budget, the authentication lockout, the rate limits and the quota. A lock
// check left to the charge (DeferredLocks) is counted once, by the call that checked it.

type Snapshot = Pick<DeferredLocks, 'firewall' | 'address'>;

export function instrumentAccess(access: AccessControl, metrics: Metrics): AccessControl {
  const refusedWith = (error: unknown, code: string) => error instanceof ApiError && error.code === code;
  const snapshot = (deferred: DeferredLocks | undefined): Snapshot => ({
    firewall: deferred?.firewall,
    address: deferred?.address,
  });
  /** Counts the deferred locks the call checked (pending before it, clear or held after); true if one held. */
  const countChecked = (before: Snapshot, deferred: DeferredLocks | undefined): boolean => {
    let held = false;
    for (const [lock, limiter] of [
      ['firewall', 'firewall'],
      ['address', 'auth_lockout'],
    ] as const) {
      const now = deferred?.[lock];
      if (before[lock] !== 'pending' || (now !== 'clear' && now !== 'held')) continue;
      metrics.limiterDecision(limiter, now === 'held' ? 'refused' : 'allowed');
      held ||= now === 'held';
    }
    return held;
  };
  return {
    async firewallBlocked(ip, hasWellFormedKey, deferred, budget) {
      const blocked = await access.firewallBlocked(ip, hasWellFormedKey, deferred, budget);
      // Left to the charge: counted when checked.
      if (deferred?.firewall !== 'pending') metrics.limiterDecision('firewall', blocked ? 'refused' : 'allowed');
      return blocked;
    },
    checkSwitches: (endpoint) => access.checkSwitches(endpoint),
    async authenticate(request) {
      const { deferred } = request;
      const before = snapshot(deferred);
      try {
        const principal = await access.authenticate(request);
        if (deferred?.address !== 'pending') metrics.limiterDecision('auth_lockout', 'allowed');
        return principal;
      } catch (error) {
        countChecked(before, deferred);
        // A blocked address never reached authentication; a lock still pending is counted when checked.
        if (error instanceof FirewallBlockedError || deferred?.address === 'pending') throw error;
        // Authentication throws rate_limited only for a locked address or key.
        metrics.limiterDecision('auth_lockout', refusedWith(error, 'rate_limited') ? 'refused' : 'allowed');
        throw error;
      }
    },
    requireScope: (principal, scope) => access.requireScope(principal, scope),
    checkTeam: (principal, team) => access.checkTeam(principal, team),
    async reserve(principal, rateClass, items, countsTowardQuota, deferred, budget) {
      const rate = rateClass === 'sync' ? 'rate_sync' : 'rate_read';
      const before = snapshot(deferred);
      try {
        const reservation = await access.reserve(principal, rateClass, items, countsTowardQuota, deferred, budget);
        countChecked(before, deferred);
        metrics.limiterDecision(rate, 'allowed');
        if (countsTowardQuota) metrics.limiterDecision('quota', 'allowed');
        return reservation;
      } catch (error) {
        // Refused by a lock: the rate limit and the quota were never asked.
        if (countChecked(before, deferred) || error instanceof FirewallBlockedError) throw error;
        if (refusedWith(error, 'rate_limited')) metrics.limiterDecision(rate, 'refused');
        else if (refusedWith(error, 'quota_exceeded')) metrics.limiterDecision('quota', 'refused');
        throw error;
      }
    },
    ...(access.checkDeferred
      ? {
          checkDeferred: async (deferred: DeferredLocks, budget?: RequestBudget) => {
            const before = snapshot(deferred);
            try {
              await access.checkDeferred?.(deferred, budget);
            } finally {
              countChecked(before, deferred);
            }
          },
        }
      : {}),
    // Not a limiter decision: passed on as is, so whoever holds the counting wrapper sees the same faults.
    ...(access.sandboxFaults ? { sandboxFaults: access.sandboxFaults.bind(access) } : {}),
  };
}
