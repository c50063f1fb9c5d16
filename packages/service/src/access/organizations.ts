import { base62 } from '../ids.js';
import { ORGANIZATION_PLANS, type OrganizationPlan, TEAM_STATES, type TeamStateValue } from '../schemas/enums.js';
import type { Entity, Store } from '../store/store.js';
import type { OrganizationState } from '../write/types.js';
import { AdminError } from './admin-error.js';
import { holdsDataMetaKey, type TeamAccessState, teamHoldsData } from './eligibility.js';

// Operator changes to the access-related fields of organizations and teams. Teams themselves are created
// by the write side (`team.upsert`); these only change plan, state, sector, legal setup and organization.

const ORG_ID = /^[0-9A-Za-z_-]{1,64}$/;

export interface OrganizationSummary extends OrganizationState {
  id: string;
}

export async function createOrganization(
  store: Store,
  input: { id?: string; name: string; plan: OrganizationPlan; apiAgreed?: boolean },
): Promise<OrganizationSummary> {
  const id = input.id ?? `org_${base62(12)}`;
  if (!ORG_ID.test(id)) throw new AdminError('invalid_argument', 'an organization id is 1 to 64 of [0-9A-Za-z_-]');
  if (!ORGANIZATION_PLANS.includes(input.plan)) throw new AdminError('invalid_argument', `plan: ${ORGANIZATION_PLANS}`);
  const state: OrganizationState = { name: input.name, plan: input.plan, apiAgreed: input.apiAgreed ?? false };
  return store.write(async (tx) => {
    if (await tx.getEntity('organization', id)) throw new AdminError('invalid_argument', `${id} already exists`);
    await tx.putEntity<OrganizationState>({ kind: 'organization', id, team: null, parent: null, state });
    return { id, ...state };
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
  if (change.plan !== undefined && !ORGANIZATION_PLANS.includes(change.plan)) {
    throw new AdminError('invalid_argument', `plan: ${ORGANIZATION_PLANS}`);
  }
  return store.write(async (tx) => {
    const org = await tx.getEntity<OrganizationState>('organization', id);
    if (!org) throw new AdminError('not_found', `no organization ${id}`);
    const state = { ...org.state, ...definedOnly(change) };
    await tx.putEntity({ ...org, state });
    return { id, ...state };
  });
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

export type TeamChange =
  | { field: 'state'; value: TeamStateValue }
  | { field: 'sensitiveSector'; value: boolean }
  | { field: 'legalSetupDone'; value: boolean }
  | { field: 'organization'; value: string | null };

/** Changes one access-related field of a team. Moving a team drops it from keys made for its old organization. */
export async function changeTeam(store: Store, id: string, change: TeamChange): Promise<TeamSummary> {
  if (change.field === 'state' && !TEAM_STATES.includes(change.value)) {
    throw new AdminError('invalid_argument', `state: ${TEAM_STATES}`);
  }
  const row = await store.write(async (tx) => {
    const team = await tx.getEntity<TeamAccessState>('team', id);
    if (!team) throw new AdminError('not_found', `no team ${id}`);
    if (
      change.field === 'organization' &&
      change.value !== null &&
      !(await tx.getEntity('organization', change.value))
    ) {
      throw new AdminError('not_found', `no organization ${change.value}`);
    }
    const updated = { ...team, state: { ...team.state, [change.field]: change.value } };
    await tx.putEntity(updated);
    return updated;
  });
  return summarizeTeam(store, row);
}

/** The operator's statement that a team holds data even before its first lead (or the withdrawal of it). */
export async function setHoldsData(store: Store, id: string, holds: boolean): Promise<TeamSummary> {
  const team = await store.getEntity<TeamAccessState>('team', id);
  if (!team) throw new AdminError('not_found', `no team ${id}`);
  await store.setMeta(holdsDataMetaKey(id), holds ? 'yes' : 'no');
  return summarizeTeam(store, team);
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
