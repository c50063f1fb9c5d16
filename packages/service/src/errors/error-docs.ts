// Generated from docs/errors.md by packages/service/scripts/generate-error-docs.ts; do not edit.

/** Each error code's description paragraphs (inline Markdown), as docs/errors.md words them. */
export const ERROR_DESCRIPTIONS: Record<string, readonly string[]> = {
  invalid_request: [
    'An unknown, repeated or out-of-range query parameter (a `limit` not written as a plain decimal integer from 1 to 100, `Infinity` and `1e309` included); a query string or body on an endpoint that takes none; a malformed path id; a cursor issued for another endpoint, filter or team, or altered; a malformed or repeated `Service-Team`; a search body that is not the expected JSON (wrong type, unknown key, neither `email` nor `phone`); two or more of `board`, `stage`, `status` on `/v1/leads` (`param` names the second one); a conversations cursor whose conversation was erased (restart the list from the first page). `param` names the parameter, header (`Service-Team`) or body field at fault and never repeats the value sent.',
  ],
  team_required: [
    "The key reads several teams, the endpoint reads one team's data and no `Service-Team` header was sent.",
  ],
  secret_key_in_browser: [
    'A secret key arrived together with an `Origin` header. Treat the key as leaked and roll it.',
  ],
  invalid_credentials: [
    'Missing or malformed `Authorization`, an unknown, wrong or revoked key, an inactive integration, or a `crmx_test_` key. Carries `WWW-Authenticate: Bearer realm="crm-export"`.',
  ],
  key_expired: ['The key was rolled and its grace period is over. Carries `WWW-Authenticate`.'],
  insufficient_scope: [
    'The key lacks the scope the endpoint needs (every key holds all five scopes, so this should not happen).',
  ],
  plan_not_entitled: ["The organization's plan does not include the API now."],
  ip_not_allowed: [
    "The request came from an address outside the integration's allowlist (checked only after the key).",
  ],
  team_state_restricted: [
    'The team is disabled, archived, billing-only or its API access is paused; `/v1/teams` still lists it.',
  ],
  sector_restricted: ['The team is in a sensitive business sector; lasts as long as the sector policy applies.'],
  capability_disabled: [
    'The operator switched this endpoint off for every key, or, on an example team, for that team only ([testing-your-consumer.md](testing-your-consumer.md)).',
  ],
  resource_missing: [
    'The record does not exist (a well-formed id of any length that names no record), was removed, belongs to a team the key does not read, or is not prepared yet; also any GET or POST under `/v1/` that matches no endpoint, and `/v1/teams/{id}` for a team the key does not read.',
  ],
  team_not_accessible: [
    "`Service-Team` names a team the key does not read (never covered, removed or deleted), or no header was sent and the key reads no team. Re-read `/v1/teams`; delete the team's data only if it is no longer listed.",
  ],
  resync_required: [
    'The feed cannot continue from this cursor (restore from backup or a gap in changes). Run a full resync.',
  ],
  capture_not_ready: [
    "The team's data is still being prepared (once per team, after it is first added to any key). Keep everything and retry in a few minutes; never resync for it.",
  ],
  sync_cursor_expired: [
    'The feed cursor is older than 30 days (from the point it reached; from the start of an initial sync while it runs). Run a full resync.',
  ],
  rate_limited: [
    'The key is over its rate limit (items a minute on list and feed endpoints, requests a minute on single-record endpoints and `/v1/me`), or a lockout after failed authentication (600 seconds). Carries `Retry-After` in whole seconds.',
  ],
  quota_exceeded: [
    "The key's daily item quota is spent; it resets at 00:00 UTC. Carries `Retry-After` in whole seconds.",
  ],
  internal_error: ['An internal failure. The body says nothing about its cause.'],
  api_disabled: ['The operator switched the whole API off for every key.'],
  service_unavailable: [
    'A dependency of the service, such as the database, is unreachable or refuses work for now. Carries `Retry-After` in whole seconds: the shortest sensible wait, not a promise; keep backing off exponentially from there. `GET /v1/health` answers this code whenever the database does not answer its ping.',
  ],
  invalid_token: [
    'Only on the internal listener (intake, management API, console). Send `Authorization: Bearer cxo_...` with a token that `crm-export admin tokens create` printed and that is not revoked. Failures count toward the same kind of lockout as API keys: an address or token with too many failures gets `429 rate_limited` for a while.',
  ],
  api_key_not_token: [
    'Only on the internal listener. The credential is an API key (`crmx_live_` or `crmx_test_`), which reads the export API and nothing else. Create an operator token with the scope you need (`crm-export admin tokens create`).',
  ],
  sequence_gap: [
    "Only on `POST /intake/v1/batches`. The batch's `follows` (or its first `seq` minus one) is beyond what the service last applied for the source. Nothing was applied. The body carries `last_seq`: resend from the event after it.",
  ],
  body_too_large: [
    'Only on the internal listener. The limit is `intakeMaxBodyBytes` for intake batches ([configuration.md](configuration.md)). Split the batch.',
  ],
  too_many_events: [
    'Only on `POST /intake/v1/batches`; `param` is `events`. The limit is `intakeMaxEvents`. Split the batch.',
  ],
  event_too_large: [
    "Only on `POST /intake/v1/batches`; `param` names the event, as `events[7]`. The limit is `intakeMaxEventBytes` (the event's JSON text). Nothing of the batch was applied; such an event cannot be sent as it is.",
  ],
  write_side_busy: [
    'Only on `POST /intake/v1/batches`. The database is busy with other writes (a lock wait ran out, a locked SQLite file, no free connection in time). Nothing was applied. Wait `Retry-After` seconds, then resend the same batch.',
  ],
  idempotency_key_reused: [
    "Only on the management API. A change was sent before with the same `Idempotency-Key` and a different method, path or body. The first request's answer stands; nothing ran. Use a new key for a new change ([management.md](management.md#idempotency)).",
  ],
  idempotency_key_in_use: [
    "Only on the management API. The first request with this key has not answered yet. Send the same request again a little later: it then gets the first request's answer.",
  ],
  action_refused: [
    'Only on the management API. The change cannot be made as things stand: an integration that is revoked, no key in its grace period, a team that does not hold data, teams of several organizations, a sandbox switch on a live team. `reason` names the refusal (the same code the `admin` command prints, see [operations.md](operations.md#errors-of-the-operator-commands)), and `detail` says what was refused.',
  ],
};
