import { COMMON_ERRORS, ERROR_CATALOGUE, ERROR_CODES, type ErrorCode } from '../errors/catalogue.js';
import type { Endpoint } from './endpoint.js';

// The error codes an endpoint can answer, derived from its declaration: what OpenAPI lists per status and
// the served reference shows (docs/reference.md). A code no declaration implies stays out of every list but
// the endpoint's own `errors`.

/**
 * What an endpoint without a key can answer: a query it does not take, the operator switches and the
 * faults. No key is read, so no key, scope, address or team refusal applies; an address that sends too
 * much gets the firewall's bare 429, not a problem body.
 */
const NO_KEY_ERRORS = [
  'invalid_request',
  'capability_disabled',
  'api_disabled',
  'internal_error',
  'service_unavailable',
] as const satisfies readonly ErrorCode[];

/** The `Service-Team` header: missing, naming a team the key does not read, or a team refused for now. */
const HEADER_TEAM_ERRORS = [
  'team_required',
  'team_not_accessible',
  'team_state_restricted',
  'sector_restricted',
] as const satisfies readonly ErrorCode[];

/** A record by id: absent or of a team the key does not read, or of a team refused for now. */
const RECORD_TEAM_ERRORS = [
  'resource_missing',
  'team_state_restricted',
  'sector_restricted',
] as const satisfies readonly ErrorCode[];

/** Every code `endpoint` can answer, in the catalogue's order (by HTTP status). */
export function endpointErrors(endpoint: Endpoint): ErrorCode[] {
  const codes = new Set<ErrorCode>(endpoint.caller === 'no_key' ? NO_KEY_ERRORS : COMMON_ERRORS);
  const { team } = endpoint;
  if (team.from !== 'none') {
    for (const code of team.from === 'header' ? HEADER_TEAM_ERRORS : RECORD_TEAM_ERRORS) codes.add(code);
    codes.add(team.whileUncaptured);
  }
  if (endpoint.charge?.quota) codes.add('quota_exceeded');
  for (const code of endpoint.errors ?? []) codes.add(code);
  return ERROR_CODES.filter((code) => codes.has(code));
}

/** `codes` grouped by HTTP status, the statuses ascending. */
export function byStatus(codes: readonly ErrorCode[]): [status: number, codes: ErrorCode[]][] {
  const groups = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const { status } = ERROR_CATALOGUE[code];
    groups.set(status, [...(groups.get(status) ?? []), code]);
  }
  return [...groups].sort(([a], [b]) => a - b);
}

/**
 * The Markdown description of one status's problem answer: each code with its title, linked when `link` is
 * given (the served reference links each to its entry on the error page).
 */
export function errorsDescription(codes: readonly ErrorCode[], link?: (code: ErrorCode) => string): string {
  const items = codes.map((code) => {
    const name = link ? `[\`${code}\`](${link(code)})` : `\`${code}\``;
    return `- ${name}: ${ERROR_CATALOGUE[code].title}`;
  });
  return ['A problem body (RFC 9457) whose `code` is one of:', '', ...items].join('\n');
}
