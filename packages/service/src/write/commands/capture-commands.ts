import { iso } from '../../clock.js';
import type { WriteTx } from '../../store/store.js';
import { DEFAULT_CRM_OPTIONS, WriteContext } from '../events/context.js';
import { publishFacets } from '../events/facets.js';
import { putTeam } from '../events/team-operations.js';
import type { LeadState, TeamState } from '../types.js';

// The writes of capture (docs/feed.md, Capture; entries of write/commands/commands.ts): a team is marked requested
// when a key first names it, its leads get their facets through the write side's own publisher, then
// the team is marked prepared. Each is idempotent, so a retried transaction or a resumed job is harmless.

/** Marks each team not yet prepared nor requested as requested; returns the teams marked. */
export async function requestCapture(tx: WriteTx, input: { teams: string[]; now: number }): Promise<string[]> {
  const marked: string[] = [];
  for (const id of input.teams) {
    const team = await tx.getEntity<TeamState>('team', id);
    if (!team || team.state.capturedAt !== null || team.state.captureRequestedAt) continue;
    await putTeam(tx, id, { ...team.state, captureRequestedAt: iso(input.now) });
    marked.push(id);
  }
  return marked;
}

/** Publishes each lead's missing facets (a lead removed since the caller listed it is skipped). */
export async function prepareLeads(tx: WriteTx, input: { leads: string[]; now: number }): Promise<void> {
  // Every record of the chunk is stamped with the time drawn for it, the same on a retry.
  const ctx = new WriteContext(tx, { now: () => input.now }, DEFAULT_CRM_OPTIONS);
  for (const id of input.leads) {
    const lead = await ctx.tx.getEntity<LeadState>('lead', id);
    if (lead) await publishFacets(ctx, lead, 'missing');
  }
}

/** Marks the team prepared; false when it does not exist or already was. */
export async function completeCapture(tx: WriteTx, input: { team: string; now: number }): Promise<boolean> {
  const current = await tx.getEntity<TeamState>('team', input.team);
  if (!current || current.state.capturedAt !== null) return false;
  await putTeam(tx, input.team, { ...current.state, capturedAt: iso(input.now) });
  return true;
}
