// The one catalogue of the API's error codes: every code the spec names, with its HTTP status,
// title and retry advice. docs/errors.md documents each; a test keeps the two in step.

export const ERROR_CATALOGUE = {
  invalid_request: { status: 400, title: 'The request is not valid.', retry: 'no' },
  team_required: { status: 400, title: 'This key reads several teams; name one in Service-Team.', retry: 'no' },
  secret_key_in_browser: { status: 400, title: 'A secret key was sent from a browser.', retry: 'no' },
  invalid_credentials: { status: 401, title: 'The API key is missing, malformed, unknown or revoked.', retry: 'no' },
  key_expired: { status: 401, title: 'The API key was rolled and its grace period is over.', retry: 'no' },
  insufficient_scope: { status: 403, title: 'The key lacks a permission this endpoint needs.', retry: 'no' },
  plan_not_entitled: { status: 403, title: "The organization's plan does not include the API.", retry: 'later' },
  ip_not_allowed: { status: 403, title: "The request's address is not on the integration's allowlist.", retry: 'no' },
  team_state_restricted: { status: 403, title: 'The team is restricted for now.', retry: 'later' },
  sector_restricted: { status: 403, title: 'The team is in a sensitive business sector.', retry: 'no' },
  capability_disabled: { status: 403, title: 'This endpoint is switched off for now.', retry: 'later' },
  resource_missing: { status: 404, title: 'No such resource.', retry: 'no' },
  team_not_accessible: {
    status: 404,
    title: 'This key does not read that team.',
    retry: 'only if /teams still lists the team, on next run',
  },
  resync_required: {
    status: 409,
    title: 'The feed cannot continue from this cursor; resync.',
    retry: 'no; full resync',
  },
  capture_not_ready: { status: 409, title: "The team's data is still being prepared.", retry: 'yes, later' },
  sync_cursor_expired: {
    status: 410,
    title: 'The cursor is older than its lifetime; resync.',
    retry: 'no; full resync',
  },
  rate_limited: { status: 429, title: 'Too many requests.', retry: 'after Retry-After' },
  quota_exceeded: { status: 429, title: 'The daily item quota is spent.', retry: 'after Retry-After' },
  internal_error: { status: 500, title: 'Internal failure.', retry: 'yes, exponential backoff' },
  api_disabled: { status: 503, title: 'The API is switched off for now.', retry: 'yes, exponential backoff' },
  service_unavailable: {
    status: 503,
    title: 'A dependency of the service is unreachable.',
    retry: 'yes, exponential backoff',
  },
  // The internal listener (intake, management API, console): operator tokens and intake batches.
  invalid_token: {
    status: 401,
    title: 'The operator token is missing, malformed, unknown or revoked.',
    retry: 'no',
  },
  api_key_not_token: { status: 401, title: 'An API key was sent where an operator token is needed.', retry: 'no' },
  sequence_gap: {
    status: 409,
    title: 'The batch does not follow the last sequence number applied for its source.',
    retry: 'yes, from last_seq',
  },
  body_too_large: { status: 413, title: 'The request body is over its size limit.', retry: 'no; send less' },
  too_many_events: { status: 413, title: 'The batch holds more events than allowed.', retry: 'no; send less' },
  event_too_large: { status: 413, title: 'An event is over its size limit.', retry: 'no' },
  write_side_busy: { status: 429, title: 'The write side is behind; retry later.', retry: 'after Retry-After' },
  // The management API (manage/api/): idempotency keys, and refusals of an operator action.
  idempotency_key_reused: {
    status: 422,
    title: 'This Idempotency-Key was used with another request.',
    retry: 'no; use a new key',
  },
  idempotency_key_in_use: {
    status: 409,
    title: 'A request with this Idempotency-Key is still running.',
    retry: 'yes, later, with the same key',
  },
  action_refused: { status: 409, title: 'The action is refused in the current state.', retry: 'no' },
} as const satisfies Record<string, { status: number; title: string; retry: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;
export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

/** The 12 errors the spec lists as common to every endpoint. */
export const COMMON_ERRORS = [
  'invalid_request',
  'secret_key_in_browser',
  'invalid_credentials',
  'key_expired',
  'insufficient_scope',
  'plan_not_entitled',
  'ip_not_allowed',
  'capability_disabled',
  'rate_limited',
  'internal_error',
  'api_disabled',
  'service_unavailable',
] as const satisfies readonly ErrorCode[];

/** What a problem body carries beyond its code. */
export interface ApiErrorOptions {
  /** The parameter, header or body field at fault. */
  param?: string;
  /** Seconds for `Retry-After`: every 429; a 503 only when set (a database unavailable for now). */
  retryAfter?: number;
  /** Extension members of the problem body (RFC 9457), e.g. `last_seq` of `sequence_gap`: ids and numbers only. */
  members?: Record<string, string | number>;
}

/** A failure the API answers with a problem body. Thrown anywhere below the routes. */
export class ApiError extends Error {
  readonly status: number;
  readonly param: string | undefined;
  readonly retryAfter: number | undefined;
  readonly members: Record<string, string | number> | undefined;
  constructor(
    readonly code: ErrorCode,
    options: ApiErrorOptions = {},
  ) {
    super(ERROR_CATALOGUE[code].title);
    this.status = ERROR_CATALOGUE[code].status;
    this.param = options.param;
    this.retryAfter = options.retryAfter;
    this.members = options.members;
  }
}
