import type { AccessControl, Principal, Reservation } from '../src/access/access-control.js';
import { SCOPES } from './service.js';

// Bench-only AccessControl variants, so the cost of each check shows as a ratio (issue 3). Never used
// by the service: `open` verifies nothing at all.

/** How much of access control a bench server runs. */
export const ACCESS_MODES = ['open', 'auth', 'memory', 'redis'] as const;
export type AccessMode = (typeof ACCESS_MODES)[number];

export const ACCESS_MODE_LABELS: Record<AccessMode, string> = {
  open: '(a) no access control',
  auth: '(b) real authentication, limits off',
  memory: '(c) authentication + memory limiter',
  redis: '(d) authentication + Redis limiter',
};

const NOTHING_RESERVED: Reservation = { settle: async () => [], fail: async () => undefined };

/** Accepts every request as one fixed integration reading `teams`: no firewall, switch, key or team check. */
export function openAccess(teams: readonly string[]): AccessControl {
  const principal: Principal = {
    integrationId: 'prn_Bench',
    keyId: 'Bench',
    name: 'bench',
    livemode: true,
    last4: 'none',
    teams,
    scopes: SCOPES,
  };
  return {
    firewallBlocked: async () => false,
    checkSwitches: async () => undefined,
    authenticate: async () => principal,
    requireScope: () => undefined,
    checkTeam: async () => undefined,
    reserve: async () => NOTHING_RESERVED,
  };
}

/**
 * Everything of `real` (firewall, switches, key, team checks) except the rate limit and quota. With no charge,
 * no lock is left to it: the firewall block and the address lock are checked up front.
 */
export function withoutLimits(real: AccessControl): AccessControl {
  return {
    firewallBlocked: (ip, wellFormed, _deferred, budget) => real.firewallBlocked(ip, wellFormed, undefined, budget),
    checkSwitches: (endpoint) => real.checkSwitches(endpoint),
    authenticate: ({ deferred: _deferred, ...request }) => real.authenticate(request),
    requireScope: (principal, scope) => real.requireScope(principal, scope),
    checkTeam: (principal, team) => real.checkTeam(principal, team),
    reserve: async () => NOTHING_RESERVED,
  };
}
