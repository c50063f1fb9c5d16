import type { Clock } from '../../clock.js';
import type { Store } from '../../store/store.js';
import type { LeadState, TeamState } from '../types.js';
import { runCommand } from './commands.js';
import type { IntegrationState } from './integration-state.js';

// Preparing a team's data (capture, docs/feed.md): every live lead gets both facets published (a facet is
// null only while being prepared), then the team's `capturedAt` is set. The job is idempotent and
// resumable: it runs in chunks, and a team whose job was interrupted is simply prepared again on the next
// run. The writes are write commands (capture-commands.ts): the facets come from the write side's own
// publisher. What the API answers meanwhile is feed/capture.ts.

/** Leads prepared per transaction, so a large team does not hold the writer for long. */
const CHUNK = 500;

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
