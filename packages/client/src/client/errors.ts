// Wire errors mapped to a few typed classes by `code` (stripe-node's Error.ts), with a fallback by HTTP
// status for codes this client does not know yet: the spec says new codes can appear at any time.

export interface ErrorDetails {
  /** HTTP status, or 0 when no answer arrived. */
  status: number;
  /** The problem body's stable `code`; null for answers without one (firewall, network). */
  code: string | null;
  /** `Service-Request-Id` / `request_id`, when the API itself answered. */
  requestId: string | null;
  /** The parameter at fault, when the problem names one. */
  param: string | null;
  /** Seconds from `Retry-After`, when present. */
  retryAfter: number | null;
}

/** Base class of every error the client throws about a request. */
export class CrmExportError extends Error {
  readonly status: number;
  readonly code: string | null;
  readonly requestId: string | null;
  readonly param: string | null;
  readonly retryAfter: number | null;
  constructor(message: string, details: ErrorDetails) {
    super(message);
    this.name = new.target.name;
    this.status = details.status;
    this.code = details.code;
    this.requestId = details.requestId;
    this.param = details.param;
    this.retryAfter = details.retryAfter;
  }
}

/** 400: the request is not valid (`invalid_request`, `team_required`, `secret_key_in_browser`). */
export class InvalidRequestError extends CrmExportError {}
/** 401: the key is missing, wrong, revoked or expired. Never retried. */
export class AuthenticationError extends CrmExportError {}
/** 403: the key may not read this now (plan, allowlist, team state, sector, capability). */
export class PermissionError extends CrmExportError {}
/** 404: no such record, or (`team_not_accessible`) the key no longer reads the team. */
export class NotFoundError extends CrmExportError {}
/** 409/410: the feed cannot continue (`resync_required`, `sync_cursor_expired`) or is not ready yet. */
export class ConflictError extends CrmExportError {
  /** True when the spec asks for a full resync rather than a later retry. */
  get resyncRequired(): boolean {
    return this.code === 'resync_required' || this.code === 'sync_cursor_expired';
  }
}
/** 429 from the API: wait `Retry-After` seconds. */
export class RateLimitError extends CrmExportError {}
/**
 * Not an answer: the client's pacing (the `RateLimit` header of an earlier answer) knows the budget is spent
 * for longer than it sleeps through (a spent daily quota), so the request was not sent. `retryAfter` is the
 * seconds until the budget resets; `code` is what the service would have answered.
 */
export class BudgetSpentError extends RateLimitError {}
/** 5xx: internal failure or the API switched off; retried with exponential backoff. */
export class ServerError extends CrmExportError {}
/** An answer without a JSON problem body: the firewall in front of the API (404, 403, plain 429). */
export class FirewallError extends CrmExportError {}
/** No answer: the connection failed, was cut, or the request timed out. */
export class ConnectionError extends CrmExportError {}
/** An auto-paging iterator reached its hard cap of pages. */
export class PagingLimitError extends Error {}

type ErrorClass = new (message: string, details: ErrorDetails) => CrmExportError;

/** Every code the spec names, with its class. */
export const CODE_CLASSES = {
  invalid_request: InvalidRequestError,
  team_required: InvalidRequestError,
  secret_key_in_browser: InvalidRequestError,
  invalid_credentials: AuthenticationError,
  key_expired: AuthenticationError,
  insufficient_scope: PermissionError,
  plan_not_entitled: PermissionError,
  ip_not_allowed: PermissionError,
  team_state_restricted: PermissionError,
  sector_restricted: PermissionError,
  capability_disabled: PermissionError,
  resource_missing: NotFoundError,
  team_not_accessible: NotFoundError,
  resync_required: ConflictError,
  capture_not_ready: ConflictError,
  sync_cursor_expired: ConflictError,
  rate_limited: RateLimitError,
  quota_exceeded: RateLimitError,
  internal_error: ServerError,
  api_disabled: ServerError,
  service_unavailable: ServerError,
  // The service's internal listener (intake and management), which a producer or a settings page calls.
  invalid_token: AuthenticationError,
  api_key_not_token: AuthenticationError,
  sequence_gap: ConflictError,
  body_too_large: InvalidRequestError,
  too_many_events: InvalidRequestError,
  event_too_large: InvalidRequestError,
  write_side_busy: RateLimitError,
  idempotency_key_reused: InvalidRequestError,
  idempotency_key_in_use: ConflictError,
  action_refused: ConflictError,
} as const satisfies Record<string, ErrorClass>;
export type KnownErrorCode = keyof typeof CODE_CLASSES;

/** The class for an unknown code, by its HTTP status. */
export function classForStatus(status: number): ErrorClass {
  if (status === 401) return AuthenticationError;
  if (status === 403) return PermissionError;
  if (status === 404) return NotFoundError;
  if (status === 409 || status === 410) return ConflictError;
  if (status === 429) return RateLimitError;
  if (status >= 500) return ServerError;
  return InvalidRequestError;
}

/** The typed error for a problem+json answer. */
export function errorFromProblem(status: number, body: Record<string, unknown>, headers: HeaderGetter): CrmExportError {
  const code = typeof body.code === 'string' ? body.code : null;
  const cls: ErrorClass =
    (code !== null && Object.hasOwn(CODE_CLASSES, code) ? CODE_CLASSES[code as KnownErrorCode] : undefined) ??
    classForStatus(status);
  const title = typeof body.title === 'string' ? body.title : `HTTP ${status}`;
  return new cls(`${title} (${code ?? status})`, {
    status,
    code,
    requestId: typeof body.request_id === 'string' ? body.request_id : headers.get('service-request-id'),
    param: typeof body.param === 'string' ? body.param : null,
    retryAfter: parseRetryAfter(headers.get('retry-after')),
  });
}

/** The firewall answers without JSON, `Retry-After` or `Service-Request-Id`. */
export function firewallError(status: number, headers: HeaderGetter): CrmExportError {
  // A non-JSON 5xx (a proxy or load balancer) is still a server failure and retried as such.
  const cls = status >= 500 ? ServerError : FirewallError;
  return new cls(`HTTP ${status} without a problem body (firewall)`, {
    status,
    code: null,
    requestId: headers.get('service-request-id'),
    param: null,
    retryAfter: parseRetryAfter(headers.get('retry-after')),
  });
}

export interface HeaderGetter {
  get(name: string): string | null;
}

export function parseRetryAfter(value: string | null): number | null {
  if (value === null || !/^\d+$/.test(value.trim())) return null;
  return Number(value.trim());
}
