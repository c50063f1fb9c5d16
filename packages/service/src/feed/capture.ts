import type { Clock } from '../clock.js';
import { ApiError } from '../errors/catalogue.js';
import type { Store } from '../store/store.js';
import { runCommand } from '../write/commands.js';
import type { IntegrationState } from '../write/integration-state.js';
import type { LeadState, TeamState } from '../write/types.js';

// Capture: a team's data is prepared once, the first time the team is added to any key. Until then
// its team endpoints answer 409 capture_not_ready and its single records 404 resource_missing.
// Preparing makes sure every live lead has both facets published (a facet is null only while being
// prepared), then sets the team's `capturedAt`. The job is idempotent and resumable: it runs in
// chunks, and a team whose job was interrupted is simply prepared again on the next run. The writes are
// write commands (write/capture-commands.ts): the facets come from the write side's own publisher.

/** Leads prepared per transaction, so a large team does not hold the writer for long. */
const CHUNK = 500;

/** Teams this process has seen prepared: capture is once per team, so the answer never changes. */
const prepared = new WeakMap<object, Set<string>>();

function preparedOf(store: object): Set<string> {
  let set = prepared.get(store);
  if (!set) {
    set = new Set();
    prepared.set(store, set);
  }
  return set;
}

/**
 * True when the team is prepared. A team without an entity has nothing to prepare (access answers
 * for it); a team entity written without the field (by a tool that predates capture) counts as prepared.
 */
export async function isCaptured(store: Pick<Store, 'getEntity'>, team: string): Promise<boolean> {
  const cache = preparedOf(store);
  if (cache.has(team)) return true;
  const entity = await store.getEntity<TeamState>('team', team);
  if (entity && entity.state.capturedAt === null) return false;
  if (entity) cache.add(team);
  return true;
}

/** For team endpoints (lists, the feed): `409 capture_not_ready` until the team is prepared. */
export async function assertCaptured(store: Pick<Store, 'getEntity'>, team: string): Promise<void> {
  if (!(await isCaptured(store, team))) throw new ApiError('capture_not_ready');
}

/** For single records: a record of a team not yet prepared is `404 resource_missing`. */
export async function assertRecordCaptured(store: Pick<Store, 'getEntity'>, team: string): Promise<void> {
  if (!(await isCaptured(store, team))) throw new ApiError('resource_missing');
}

/**
 * Called when a key starts naming teams (`createIntegration`): marks each team not yet prepared as
 * requested, then prepares it before returning, so a new key normally never meets 409 (a one-off pass
 * over the team's leads). With `prepareNow: false` the capture job does it. Returns the teams marked.
 */
export async function requestCapture(
  store: Store,
  clock: Clock,
  teams: readonly string[],
  options: { prepareNow?: boolean } = {},
): Promise<string[]> {
  const requested = await runCommand(store, 'capture.request', { teams: [...teams], now: clock.now() });
  if (options.prepareNow ?? true) for (const team of requested) await captureTeam(store, clock, team);
  return requested;
}

/**
 * Teams waiting to be prepared: requested ones, and every team an integration names (so a key created
 * by any path is covered even if nobody called `requestCapture`).
 */
export async function pendingCaptures(store: Store): Promise<string[]> {
  const pending = new Set<string>();
  const teams = await store.findEntities<TeamState>('team', {});
  const uncaptured = new Set(teams.filter((t) => t.state.capturedAt === null).map((t) => t.id));
  for (const t of teams) if (uncaptured.has(t.id) && t.state.captureRequestedAt) pending.add(t.id);
  for (const integration of await store.findEntities<IntegrationState>('integration', {})) {
    for (const team of integration.state.teams ?? []) if (uncaptured.has(team)) pending.add(team);
  }
  return [...pending];
}

/** Prepares one team; returns false when the team does not exist or was already prepared. */
export async function captureTeam(store: Store, clock: Clock, team: string): Promise<boolean> {
  const entity = await store.getEntity<TeamState>('team', team);
  if (!entity || entity.state.capturedAt !== null) return false;
  const leads = await store.findEntities<LeadState>('lead', { team });
  for (let i = 0; i < leads.length; i += CHUNK) {
    const ids = leads.slice(i, i + CHUNK).map((l) => l.id);
    await runCommand(store, 'capture.prepare_leads', { leads: ids, now: clock.now() });
  }
  return runCommand(store, 'capture.complete', { team, now: clock.now() });
}

/** Prepares every pending team; returns the teams prepared by this run. */
export async function capturePending(store: Store, clock: Clock): Promise<string[]> {
  const done: string[] = [];
  for (const team of await pendingCaptures(store)) {
    if (await captureTeam(store, clock, team)) done.push(team);
  }
  return done;
}
