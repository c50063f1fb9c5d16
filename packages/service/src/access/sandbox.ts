import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { AdminError } from '../errors/admin-error.js';
import type { Limits } from '../limits.js';
import type { RecordKind, RemovalReason } from '../schemas/enums.js';
import type { Store } from '../store/store.js';
import { drawTokens, runCommand } from '../write/commands/commands.js';
import type { IntegrationState } from '../write/commands/integration-state.js';
import type { SandboxTeamChange } from '../write/commands/meta-commands.js';
import {
  type CursorRefusal,
  parseSandboxIntegration,
  parseSandboxTeam,
  type SandboxIntegrationState,
  type SandboxTeamState,
  sandboxIntegrationKey,
  sandboxTeamKey,
} from '../write/commands/meta-state.js';
import type { TeamAccessState } from '../write/commands/team-access.js';
import { Crm } from '../write/events/crm.js';
import type { CrmEvent } from '../write/events/events.js';
import { LiveTeamWriteError } from '../write/events/example-teams-only.js';
import { WriteError } from '../write/events/write-error.js';
import { ENDPOINT_NAMES, isEndpointName } from './endpoints.js';
import { utcDay } from './limits/rate-limits.js';

// Sandbox fault switches (docs/testing-your-consumer.md): an operator makes an example team (livemode
// false) answer what a consumer must cope with — expired cursors, a required resync, data not ready, a
// spent rate allowance or quota, a locked key, an endpoint switched off, a record erased — so a consumer
// can be tested against the real service. Live teams are refused. The state lives in the meta table, one
// JSON value per team and per integration; request checks read it through access control's cache
// (`limits.keyCacheMs`), the feed reads the cursor token at every request. The state's shape and keys are
// in write/commands/meta-state.ts, its changes are write commands (write/commands/meta-commands.ts).

/** The feed epoch cursors of `team` carry: the database's epoch, with the team's sandbox token when it has one. */
export function teamFeedEpoch(epoch: string, state: SandboxTeamState | undefined): string {
  return state?.cursors ? `${epoch}-${state.cursors.token}` : epoch;
}

/** Whole seconds until `until`, at least 1 (a Retry-After). */
export const secondsUntil = (until: number, now: number): number => Math.max(1, Math.ceil((until - now) / 1000));

// --- operator side -------------------------------------------------------------------------------------

/** Refuses anything but an existing example team. */
async function exampleTeam(store: Pick<Store, 'getEntity'>, team: string): Promise<void> {
  const entity = await store.getEntity<TeamAccessState>('team', team);
  if (!entity) throw new AdminError('not_found', `team ${team} does not exist`);
  if (entity.state.livemode)
    throw new AdminError(
      'live_team',
      `team ${team} is a live team: sandbox faults apply only to example teams (livemode false)`,
    );
}

/** Refuses an integration that does not read the example team `team`. */
async function exampleIntegration(store: Pick<Store, 'getEntity'>, team: string, integration: string): Promise<void> {
  await exampleTeam(store, team);
  const entity = await store.getEntity<IntegrationState>('integration', integration);
  if (!entity) throw new AdminError('not_found', `integration ${integration} does not exist`);
  if (entity.state.livemode || !entity.state.teams.includes(team))
    throw new AdminError('invalid_argument', `integration ${integration} does not read the example team ${team}`);
}

async function updateTeam(store: Store, team: string, change: SandboxTeamChange): Promise<SandboxTeamState> {
  await exampleTeam(store, team);
  return runCommand(store, 'sandbox.team', { team, ...change });
}

/** Every feed cursor of the team issued so far gets `refusal` (410 sync_cursor_expired or 409 resync_required). */
export async function refuseCursors(
  store: Store,
  team: string,
  refusal: CursorRefusal,
): Promise<{ team: string; cursors: CursorRefusal }> {
  await updateTeam(store, team, { change: 'cursors', refusal, tokens: drawTokens(12) });
  return { team, cursors: refusal };
}

/** The team's endpoints answer 409 capture_not_ready (single records 404) for `forMs`. */
export async function holdNotReady(
  store: Store,
  clock: Clock,
  team: string,
  forMs: number,
): Promise<{ team: string; notReadyUntil: string }> {
  const until = clock.now() + forMs;
  await updateTeam(store, team, { change: 'not_ready', until });
  return { team, notReadyUntil: iso(until) };
}

/** Switches one endpoint off (or back on) for the team only. */
export async function setTeamCapability(
  store: Store,
  team: string,
  endpoint: string,
  off: boolean,
): Promise<{ team: string; capabilitiesOff: string[] }> {
  if (!isEndpointName(endpoint))
    throw new AdminError('invalid_argument', `unknown endpoint ${endpoint} (known: ${ENDPOINT_NAMES.join(', ')})`);
  const next = await updateTeam(store, team, { change: 'capability', endpoint, off });
  return { team, capabilitiesOff: next.capabilitiesOff ?? [] };
}

export const INTEGRATION_FAULTS = ['rate_limited', 'quota_exceeded', 'locked'] as const;
export type IntegrationFault = (typeof INTEGRATION_FAULTS)[number];

/**
 * Makes the integration's requests answer 429: `rate_limited` (its minute spent; default the rate window),
 * `quota_exceeded` (its day spent; default until 00:00 UTC) or `locked` (the failed-authentication lockout;
 * default the lock length). `forMs` overrides the default.
 */
export async function spendIntegration(
  store: Store,
  clock: Clock,
  limits: Pick<Limits, 'rateWindowSeconds' | 'authLockSeconds'>,
  team: string,
  integration: string,
  fault: IntegrationFault,
  forMs?: number,
): Promise<{ team: string; integration: string; fault: IntegrationFault; until: string }> {
  const now = clock.now();
  const until =
    now +
    (forMs ??
      (fault === 'rate_limited'
        ? limits.rateWindowSeconds * 1000
        : fault === 'locked'
          ? limits.authLockSeconds * 1000
          : utcDay(now).msToMidnight));
  const field = { rate_limited: 'rateLimitedUntil', quota_exceeded: 'quotaExceededUntil', locked: 'lockedUntil' }[
    fault
  ] as keyof SandboxIntegrationState;
  await exampleIntegration(store, team, integration);
  await runCommand(store, 'sandbox.integration', { integration, fault: field, until });
  return { team, integration, fault, until: iso(until) };
}

/**
 * Ends every timed fault and capability switch of the team and of the integrations reading it. Cursor
 * refusals stay: cursors issued since carry the new token and keep working.
 */
export async function clearSandbox(store: Store, team: string): Promise<{ team: string; integrations: string[] }> {
  await updateTeam(store, team, { change: 'clear' });
  const integrations = (await store.findEntities<IntegrationState>('integration', {}))
    .filter((i) => !i.state.livemode && i.state.teams.includes(team))
    .map((i) => i.id);
  await runCommand(store, 'sandbox.clear_integrations', { integrations });
  return { team, integrations };
}

/** Removal events by the kind a record id names; `erased` and `deleted` where the write side has them. */
const REMOVALS: Partial<Record<RecordKind, { erased?: string; deleted: string; field: string }>> = {
  lead: { erased: 'lead.erased', deleted: 'lead.deleted', field: 'lead' },
  call: { erased: 'call.erased', deleted: 'call.deleted', field: 'call' },
  conversation: { erased: 'conversation.erased', deleted: 'conversation.deleted', field: 'conversation' },
  booking: { deleted: 'booking.deleted', field: 'booking' },
};

/**
 * Erases or deletes one record of the example team through the write side (the event the CRM would send),
 * so the feed carries its removal like any other.
 */
export async function removeRecord(
  store: Store,
  clock: Clock,
  team: string,
  record: string,
  how: RemovalReason,
): Promise<{ team: string; record: string; removed: RemovalReason }> {
  await exampleTeam(store, team);
  const kind = record.slice(0, record.indexOf('_')) as RecordKind;
  // An own entry only: `--record constructor_x` must not find the prototype's member.
  const removal = Object.hasOwn(REMOVALS, kind) ? REMOVALS[kind] : undefined;
  const type = removal?.[how];
  if (!removal || !type)
    throw new AdminError(
      'invalid_argument',
      `--record must name a ${Object.entries(REMOVALS)
        .filter(([, r]) => r?.[how])
        .map(([k]) => k)
        .join(', ')} (${how})`,
    );
  const stored = await store.getRecord(kind, record);
  if (!stored || stored.team !== team) throw new AdminError('not_found', `${record} is not a record of ${team}`);
  if (stored.removed !== null) throw new AdminError('invalid_argument', `${record} is already removed`);
  const event = { type, at: iso(clock.now()), [removal.field]: record } as unknown as CrmEvent;
  try {
    // A cascade can reach past the team (a lead transferred from a live team): the whole event is refused then.
    await new Crm(store, clock, { exampleTeamsOnly: true }).apply(event);
  } catch (error) {
    if (error instanceof LiveTeamWriteError)
      throw new AdminError(
        'live_team',
        `${record} cannot be ${how} by a sandbox switch: ${error.message} (send the CRM's ${type} event through crm-export ingest instead)`,
      );
    if (error instanceof WriteError) throw new AdminError('invalid_argument', error.message);
    throw error;
  }
  return { team, record, removed: how };
}

/** The sandbox state of a team and the integrations reading it (for `admin sandbox show`). */
export async function showSandbox(
  store: Store,
  team: string,
): Promise<{ team: string; state: SandboxTeamState; integrations: Record<string, SandboxIntegrationState> }> {
  await exampleTeam(store, team);
  const integrations: Record<string, SandboxIntegrationState> = {};
  for (const i of await store.findEntities<IntegrationState>('integration', {})) {
    if (!i.state.livemode && i.state.teams.includes(team))
      integrations[i.id] = parseSandboxIntegration(await store.getMeta(sandboxIntegrationKey(i.id)));
  }
  return { team, state: parseSandboxTeam(await store.getMeta(sandboxTeamKey(team))), integrations };
}

/** Parses a duration: `500ms`, `30s`, `5m`, `2h` (1 ms to 7 days). */
export function parseDuration(value: string): number {
  const m = /^(\d{1,9})(ms|s|m|h)$/.exec(value.trim());
  const ms = m ? Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'] : NaN;
  if (!(ms >= 1 && ms <= 7 * 86_400_000))
    throw new AdminError(
      'invalid_argument',
      `--for must be a duration like 30s, 5m or 2h (at most 7 days), got ${value}`,
    );
  return ms;
}
