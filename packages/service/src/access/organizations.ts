import { base62 } from '../ids.js';
import type { OrganizationPlan } from '../schemas/enums.js';
import type { Entity, Store } from '../store/store.js';
import type { OrganizationSummary, TeamChange } from '../write/commands/access-commands.js';
import { runCommand } from '../write/commands/commands.js';
import type { TeamAccessState } from '../write/commands/team-access.js';
import type { OrganizationState } from '../write/types.js';
import { teamHoldsData } from './eligibility.js';

// Operator changes to the access-related fields of organizations and teams, run as write commands
// (write/commands/commands.ts). Teams themselves are created by the write side (`team.upsert`); these only change
// plan, state, sector, legal setup and organization.

export async function createOrganization(
  store: Store,
  input: { id?: string; name: string; plan: OrganizationPlan; apiAgreed?: boolean },
): Promise<OrganizationSummary> {
  const id = input.id ?? `org_${base62(12)}`;
  return runCommand(store, 'organization.create', {
    id,
    name: input.name,
    plan: input.plan,
    apiAgreed: input.apiAgreed ?? false,
  });
}

export async function listOrganizations(store: Store): Promise<OrganizationSummary[]> {
  const rows = await store.findEntities<OrganizationState>('organization', {});
  return rows.map((row) => ({ id: row.id, ...row.state }));
}

export async function setOrganizationPlan(
  store: Store,
  id: string,
  change: { plan?: OrganizationPlan; apiAgreed?: boolean },
): Promise<OrganizationSummary> {
  return runCommand(store, 'organization.set_plan', { id, plan: change.plan, apiAgreed: change.apiAgreed });
}

export interface TeamSummary extends TeamAccessState {
  id: string;
  holdsData: boolean;
}

export async function listTeams(store: Store): Promise<TeamSummary[]> {
  const rows = await store.findEntities<TeamAccessState>('team', {});
  return Promise.all(rows.map(async (row) => summarizeTeam(store, row)));
}

async function summarizeTeam(store: Store, row: Entity<TeamAccessState>): Promise<TeamSummary> {
  const s = row.state;
  return {
    id: row.id,
    name: s.name ?? null,
    organization: s.organization ?? null,
    state: s.state,
    legalSetupDone: s.legalSetupDone,
    sensitiveSector: s.sensitiveSector,
    livemode: s.livemode,
    holdsData: await teamHoldsData(store, row.id),
  };
}

/** Changes one access-related field of a team. Moving a team drops it from keys made for its old organization. */
export async function changeTeam(store: Store, id: string, change: TeamChange): Promise<TeamSummary> {
  return summarizeTeam(store, await runCommand(store, 'team.change', { id, change }));
}

/** The operator's statement that a team holds data even before its first lead (or the withdrawal of it). */
export async function setHoldsData(store: Store, id: string, holds: boolean): Promise<TeamSummary> {
  return summarizeTeam(store, await runCommand(store, 'team.holds_data', { id, holds }));
}
