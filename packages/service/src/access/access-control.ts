import type { Scope } from '../schemas/enums.js';
import type { RequestBudget } from './limits/redis-health.js';

export type { RequestBudget } from './limits/redis-health.js';

// The contract between the HTTP layer and access control. The HTTP layer calls these in the order
// documented in docs/auth.md; each throws an `ApiError` with the spec's code when a check fails.

/** Who a request is, once its key is verified. */
export interface Principal {
  integrationId: string;
  /** The lookup id of the key used (never the secret). */
  keyId: string;
  name: string;
  livemode: boolean;
  /** Last four characters of the key used. */
  last4: string;
  /** Teams the key reads today, restricted ones included (those answer 403 on their endpoints). */
  teams: readonly string[];
  scopes: readonly Scope[];
}

/** What a request costs: `sync` endpoints spend items, `read` endpoints one request. */
export type RateClass = 'sync' | 'read';

/** Names of the item budgets in the `RateLimit-Policy` and `RateLimit` headers (docs/limits.md, "Budget headers"). */
export type BudgetPolicy = 'items-minute' | 'items-day';

/** What one item budget of the key has left once an answer's own items are settled. */
export interface BudgetWindow {
  policy: BudgetPolicy;
  /** Items the budget allows in its window. */
  quota: number;
  /** Length of the window, seconds (the day: 86400). */
  windowSeconds: number;
  /** Items left in the current window (0 when spent). */
  remaining: number;
  /** Whole seconds until the window ends, rounded up, at least 1. */
  resetSeconds: number;
}

export interface Reservation {
  /**
   * The request answered with `used` items: gives back the unused part of the reservation (or charges what
   * went beyond it) and counts `used` toward the daily quota. Only the first settle or fail counts.
   * Resolves with the key's item budgets as they stand after this settlement (empty for the read class).
   */
  settle(used: number): Promise<readonly BudgetWindow[]>;
  /** The request was refused after its reservation: keeps one item (sync) or its request (read), no quota. */
  fail(): Promise<void>;
}

export interface TeamSandboxFaults {
  /** The team answers 409 capture_not_ready (404 for single records) for now. */
  notReady: boolean;
  capabilitiesOff: readonly string[];
}

export interface AccessRequest {
  authorization: string | undefined;
  origin: string | undefined;
  ip: string;
  /** The connection the request came on (its socket): a key it presented before is not hashed again (keys.ts). */
  connection?: object | undefined;
  /** The request's lock checks left to its charge; the address lockout joins them (absent: checked at once). */
  deferred?: DeferredLocks | undefined;
  /** The request's Redis time (every method that may wait on Redis takes it): at most one budget in all. */
  budget?: RequestBudget | undefined;
}

/** Where a deferred lock check stands: waiting for the charge, or what the check found. */
export type DeferredState = 'pending' | 'clear' | 'held';

/**
 * The lock checks of one request that wait for its charge, so the firewall block, the address lockout, the
 * daily quota and the rate allowance take one Redis round trip together (docs/limits.md, "One round trip").
 * A request whose answer comes before its charge (any refusal, a bad parameter) has them checked first, so a
 * lock still answers before everything that comes after it in the order of the checks. Absent member: that
 * lock was not deferred.
 */
export interface DeferredLocks {
  readonly ip: string;
  /** The firewall block of `ip`. */
  firewall?: DeferredState;
  /** The failed-authentication lock of `ip` (set by `authenticate`). */
  address?: DeferredState;
}

/** A deferred firewall block found to hold: the firewall's plain 429 answers. */
export class FirewallBlockedError extends Error {
  constructor() {
    super('address blocked by the firewall budget');
    this.name = 'FirewallBlockedError';
  }
}

export interface AccessControl {
  /**
   * Firewall budget of an address; true when the firewall must answer a plain 429. With `deferred` and a
   * well-formed key, the block is left to the charge (`deferred.firewall` pending) when the implementation can.
   */
  firewallBlocked(
    ip: string,
    hasWellFormedKey: boolean,
    deferred?: DeferredLocks,
    budget?: RequestBudget,
  ): Promise<boolean>;
  /** Operator switches: throws `api_disabled` or `capability_disabled` for this endpoint. */
  checkSwitches(endpoint: string): Promise<void>;
  /** Verifies the key and the request's address; counts failures and applies lockouts. */
  authenticate(request: AccessRequest): Promise<Principal>;
  /** Throws `insufficient_scope` when the key lacks the scope. */
  requireScope(principal: Principal, scope: Scope): void;
  /** Eligibility of a team the key reads, at request time: `plan_not_entitled`, `team_state_restricted`, `sector_restricted`. */
  checkTeam(principal: Principal, team: string): Promise<void>;
  /**
   * Sets aside `items` (sync class) or one request (read class) up front; throws `rate_limited` or
   * `quota_exceeded` with the seconds to wait. `countsTowardQuota` is false for single records, search and /me.
   * The pending locks of `deferred` are checked first, in the same step (refusals as `checkDeferred`).
   */
  reserve(
    principal: Principal,
    rateClass: RateClass,
    items: number,
    countsTowardQuota: boolean,
    deferred?: DeferredLocks,
    budget?: RequestBudget,
  ): Promise<Reservation>;
  /**
   * Checks the request's pending locks now (it is answered before its charge): throws `FirewallBlockedError`
   * or the lockout's `rate_limited` when one holds. Present whenever the implementation defers locks.
   */
  checkDeferred?(deferred: DeferredLocks, budget?: RequestBudget): Promise<void>;
  /**
   * Sandbox faults of an example team (docs/testing-your-consumer.md): whether it answers as not prepared
   * and the endpoints switched off for it. Undefined for a live key; absent in access controls without sandbox.
   */
  sandboxFaults?(principal: Principal, team: string): Promise<TeamSandboxFaults | undefined>;
}
