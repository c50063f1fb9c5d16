import type { Scope } from '../schemas/enums.js';

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

export interface Reservation {
  /** Gives back the unused part of the reservation and counts `used` items toward the daily quota. */
  settle(used: number): Promise<void>;
}

export interface AccessRequest {
  authorization: string | undefined;
  origin: string | undefined;
  ip: string;
}

export interface AccessControl {
  /** Firewall budget of an address; true when the firewall must answer a plain 429. */
  firewallBlocked(ip: string, hasWellFormedKey: boolean): Promise<boolean>;
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
   */
  reserve(principal: Principal, rateClass: RateClass, items: number, countsTowardQuota: boolean): Promise<Reservation>;
}
