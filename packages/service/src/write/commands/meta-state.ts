// What the meta table holds besides the write side's own rows: secrets, operator switches, the feed epoch,
// the first start's record and the sandbox faults of example teams. The commands that write these keys
// (write/commands/meta-commands.ts) and the code that reads them share the names and parsers below.

/** The generated key pepper (unless `CRM_EXPORT_PEPPER` is set). */
export const PEPPER_META_KEY = 'key_pepper';
/** The secret cursors are signed with. */
export const CURSOR_SECRET_META_KEY = 'cursor_secret';
/** The feed epoch every feed cursor carries (docs/feed.md, restore). */
export const FEED_EPOCH_META_KEY = 'feed_epoch';
/** The epoch of a database that was never marked. */
export const INITIAL_FEED_EPOCH = '0';
/** What the first `crm-export start` created (never the key itself). */
export const START_META_KEY = 'demo_start';

/** The operator's "this team holds data" override. */
export const holdsDataMetaKey = (team: string): string => `holds_data:${team}`;

// --- operator switches -----------------------------------------------------------------------------------

/**
 * `api_disabled` (every endpoint answers 503 api_disabled) and `capability_disabled` (a JSON array of
 * endpoint names answering 403 capability_disabled).
 */
export const SWITCH_KEYS = { apiDisabled: 'api_disabled', capabilityDisabled: 'capability_disabled' } as const;

export function isOn(value: string | undefined): boolean {
  return value !== undefined && ['1', 'true', 'yes', 'on'].includes(value.trim().toLowerCase());
}

/** A switch listing endpoints: a JSON array of strings, or a comma-separated list. */
export function parseEndpointList(value: string | undefined): string[] {
  if (!value) return [];
  try {
    const parsed: unknown = JSON.parse(value);
    if (Array.isArray(parsed)) return parsed.filter((v): v is string => typeof v === 'string');
  } catch {
    // Not JSON: a plain list.
  }
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

// --- sandbox faults of example teams (docs/testing-your-consumer.md) ---------------------------------------

const TEAM_PREFIX = 'sandbox_team:';
const INTEGRATION_PREFIX = 'sandbox_integration:';

/** What a cursor issued before the last sandbox cursor change gets. */
export type CursorRefusal = 'sync_cursor_expired' | 'resync_required';

export interface SandboxTeamState {
  /** Carried by every feed cursor issued since the last change; a cursor without it gets `refusal`. */
  cursors?: { token: string; refusal: CursorRefusal };
  /** Epoch ms until which the team's endpoints answer 409 capture_not_ready (404 for single records). */
  notReadyUntil?: number;
  /** Endpoints answering 403 capability_disabled for this team. */
  capabilitiesOff?: string[];
}

export interface SandboxIntegrationState {
  /** Epoch ms until which every request with the integration's keys answers 429 rate_limited (a lockout). */
  lockedUntil?: number;
  /** Epoch ms until which requests spending items or reads answer 429 rate_limited. */
  rateLimitedUntil?: number;
  /** Epoch ms until which requests counting toward the quota answer 429 quota_exceeded. */
  quotaExceededUntil?: number;
}

export const sandboxTeamKey = (team: string): string => `${TEAM_PREFIX}${team}`;
export const sandboxIntegrationKey = (integration: string): string => `${INTEGRATION_PREFIX}${integration}`;

function parse<T extends object>(value: string | undefined): T {
  if (!value) return {} as T;
  try {
    const parsed: unknown = JSON.parse(value);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as T) : ({} as T);
  } catch {
    return {} as T;
  }
}

export const parseSandboxTeam = (value: string | undefined): SandboxTeamState => parse<SandboxTeamState>(value);
export const parseSandboxIntegration = (value: string | undefined): SandboxIntegrationState =>
  parse<SandboxIntegrationState>(value);
