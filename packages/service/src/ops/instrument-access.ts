import type { AccessControl } from '../access/access-control.js';
import { ApiError } from '../errors/catalogue.js';
import type { Metrics } from './metrics.js';

// Counts the decisions of the limiters (metrics.ts, limiter_decisions_total) by wrapping the access control
// the HTTP layer calls: the firewall budget, the authentication lockout, the rate limits and the quota.

export function instrumentAccess(access: AccessControl, metrics: Metrics): AccessControl {
  const refusedWith = (error: unknown, code: string) => error instanceof ApiError && error.code === code;
  return {
    async firewallBlocked(ip, hasWellFormedKey) {
      const blocked = await access.firewallBlocked(ip, hasWellFormedKey);
      metrics.limiterDecision('firewall', blocked ? 'refused' : 'allowed');
      return blocked;
    },
    checkSwitches: (endpoint) => access.checkSwitches(endpoint),
    async authenticate(request) {
      try {
        const principal = await access.authenticate(request);
        metrics.limiterDecision('auth_lockout', 'allowed');
        return principal;
      } catch (error) {
        // Authentication throws rate_limited only for a locked address or key.
        metrics.limiterDecision('auth_lockout', refusedWith(error, 'rate_limited') ? 'refused' : 'allowed');
        throw error;
      }
    },
    requireScope: (principal, scope) => access.requireScope(principal, scope),
    checkTeam: (principal, team) => access.checkTeam(principal, team),
    async reserve(principal, rateClass, items, countsTowardQuota) {
      const rate = rateClass === 'sync' ? 'rate_sync' : 'rate_read';
      try {
        const reservation = await access.reserve(principal, rateClass, items, countsTowardQuota);
        metrics.limiterDecision(rate, 'allowed');
        if (countsTowardQuota) metrics.limiterDecision('quota', 'allowed');
        return reservation;
      } catch (error) {
        if (refusedWith(error, 'rate_limited')) metrics.limiterDecision(rate, 'refused');
        else if (refusedWith(error, 'quota_exceeded')) metrics.limiterDecision('quota', 'refused');
        throw error;
      }
    },
    ...(access.inRequest ? { inRequest: access.inRequest.bind(access) } : {}),
  };
}
