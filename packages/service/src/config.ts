// Every number of the spec's Limits table and of decisions.md, as defaults an operator can change.
// Tests and benchmarks shorten or raise them; a fresh install uses exactly these values.

export interface Limits {
  /** Items a minute per key over list and feed endpoints (reserve-and-refund). */
  itemsPerMinute: number;
  /** Requests a minute per key on single-record endpoints and /me. */
  readRequestsPerMinute: number;
  /** Items per key per UTC day. */
  dailyItemQuota: number;
  /** Failed authentications from one address in a minute before it is locked. */
  authFailuresPerIp: number;
  /** Failed authentications with one key id in a minute before it is locked. */
  authFailuresPerKey: number;
  /** Lock length after too many failures, seconds. */
  authLockSeconds: number;
  /** Requests a minute from one address without a well-formed key before the firewall answers 429. */
  firewallRequestsPerMinute: number;
  /** How long the firewall keeps answering 429, seconds. */
  firewallLockSeconds: number;
  /** Largest request body, bytes. */
  maxBodyBytes: number;
  /** Cursor lifetime from the point it reached, ms. */
  cursorLifetimeMs: number;
  /** How long a removal stays in the feed, ms. */
  removalRetentionMs: number;
  /** How long superseded record entries stay in the feed (so a retried page comes back the same), ms. */
  supersededRetentionMs: number;
  /** The newest changes the feed holds back, ms. */
  feedHoldBackMs: number;
  /** Allowlist entries per integration. */
  allowlistSize: number;
  /** Active integrations per organization (or team outside one). */
  activeIntegrations: number;
  /** How long a process may keep trusting a cached key before re-reading it, ms (revocation delay). */
  keyCacheMs: number;
}

const DAY = 24 * 60 * 60 * 1000;

export const DEFAULT_LIMITS: Limits = {
  itemsPerMinute: 2000,
  readRequestsPerMinute: 600,
  dailyItemQuota: 1_000_000,
  authFailuresPerIp: 60,
  authFailuresPerKey: 20,
  authLockSeconds: 600,
  firewallRequestsPerMinute: 300,
  firewallLockSeconds: 600,
  maxBodyBytes: 16 * 1024,
  cursorLifetimeMs: 30 * DAY,
  removalRetentionMs: 45 * DAY,
  supersededRetentionMs: 1 * DAY,
  feedHoldBackMs: 10_000,
  allowlistSize: 20,
  activeIntegrations: 10,
  keyCacheMs: 4_000,
};

/** The release this build answers with in `Service-Release`. */
export const RELEASE = 'crm-export@0.1.0';

/** Where problem `type` links point. */
export const DOCS_URL = 'https://docs.crm-export.dev';

/** The realm of `WWW-Authenticate: Bearer realm=...`. */
export const API_REALM = 'crm-export';
