import { iso } from '../../clock.js';
import { AdminError } from '../../errors/admin-error.js';
import { ORGANIZATION_PLANS, type OrganizationPlan, TEAM_STATES, type TeamStateValue } from '../../schemas/enums.js';
import type { Entity, WriteTx } from '../../store/store.js';
import { putTeam } from '../events/team-operations.js';
import type { OrganizationState, TeamState } from '../types.js';
import { normalizeAllowlist, normalizeAllowlistEntry } from './allowlist-entries.js';
import { type IntegrationState, type IntegrationSummary, summarizeIntegration } from './integration-state.js';
import { type ApiKeyState, type DrawnKey, effectiveKeyStatus, GRACE_MS, type GracePeriod } from './key-state.js';
import { holdsDataMetaKey } from './meta-state.js';
import { planEntitled } from './team-access.js';

// The operator's commands on organizations, teams, integrations and keys (entries of write/commands/commands.ts).
// Each runs inside one transaction and may run again when PostgreSQL retries it: ids, keys and times
// arrive drawn in the input, and nothing here touches anything but the transaction.

const ORG_ID = /^[0-9A-Za-z_-]{1,64}$/;

export interface OrganizationSummary extends OrganizationState {
  id: string;
}

export interface CreateOrganization {
  id: string;
  name: string;
  plan: OrganizationPlan;
  apiAgreed: boolean;
}

export async function createOrganization(tx: WriteTx, input: CreateOrganization): Promise<OrganizationSummary> {
  const { id } = input;
  if (!ORG_ID.test(id)) throw new AdminError('invalid_argument', 'an organization id is 1 to 64 of [0-9A-Za-z_-]');
  if (!ORGANIZATION_PLANS.includes(input.plan)) throw new AdminError('invalid_argument', `plan: ${ORGANIZATION_PLANS}`);
  const state: OrganizationState = { name: input.name, plan: input.plan, apiAgreed: input.apiAgreed };
  if (await tx.getEntity('organization', id)) throw new AdminError('invalid_argument', `${id} already exists`);
  await tx.putEntity<OrganizationState>({ kind: 'organization', id, team: null, parent: null, state });
  return { id, ...state };
}

export interface SetOrganizationPlan {
  id: string;
  plan?: OrganizationPlan | undefined;
  apiAgreed?: boolean | undefined;
}

export async function setOrganizationPlan(tx: WriteTx, input: SetOrganizationPlan): Promise<OrganizationSummary> {
  if (input.plan !== undefined && !ORGANIZATION_PLANS.includes(input.plan)) {
    throw new AdminError('invalid_argument', `plan: ${ORGANIZATION_PLANS}`);
  }
  const org = await tx.getEntity<OrganizationState>('organization', input.id);
  if (!org) throw new AdminError('not_found', `no organization ${input.id}`);
  const state = { ...org.state };
  if (input.plan !== undefined) state.plan = input.plan;
  if (input.apiAgreed !== undefined) state.apiAgreed = input.apiAgreed;
  await tx.putEntity({ ...org, state });
  return { id: input.id, ...state };
}

export type TeamChange =
  | { field: 'state'; value: TeamStateValue }
  | { field: 'sensitiveSector'; value: boolean }
  | { field: 'legalSetupDone'; value: boolean }
  | { field: 'organization'; value: string | null };

/** Changes one access-related field of a team through the one team writer (`putTeam`). */
export async function changeTeam(tx: WriteTx, input: { id: string; change: TeamChange }): Promise<Entity<TeamState>> {
  const { id, change } = input;
  if (change.field === 'state' && !TEAM_STATES.includes(change.value)) {
    throw new AdminError('invalid_argument', `state: ${TEAM_STATES}`);
  }
  const team = await tx.getEntity<TeamState>('team', id);
  if (!team) throw new AdminError('not_found', `no team ${id}`);
  if (change.field === 'organization' && change.value !== null && !(await tx.getEntity('organization', change.value))) {
    throw new AdminError('not_found', `no organization ${change.value}`);
  }
  const state: TeamState = { ...team.state, [change.field]: change.value };
  await putTeam(tx, id, state);
  return { ...team, parent: state.organization, state };
}

/** The operator's statement that a team holds data even before its first lead (or the withdrawal of it). */
export async function setHoldsData(tx: WriteTx, input: { id: string; holds: boolean }): Promise<Entity<TeamState>> {
  const team = await tx.getEntity<TeamState>('team', input.id);
  if (!team) throw new AdminError('not_found', `no team ${input.id}`);
  await tx.setMeta(holdsDataMetaKey(input.id), input.holds ? 'yes' : 'no');
  return team;
}

/** What is stored of a drawn key: never the key itself. */
export type StoredKey = Omit<DrawnKey, 'key'>;

async function putKey(tx: WriteTx, integration: string, key: StoredKey, now: number): Promise<void> {
  const state: ApiKeyState = {
    digest: key.digest,
    last4: key.last4,
    status: 'active',
    createdAt: iso(now),
    graceEndsAt: null,
    revokedAt: null,
  };
  await tx.putEntity<ApiKeyState>({ kind: 'api_key', id: key.keyId, team: null, parent: integration, state });
}

export interface CreateIntegration {
  /** The new integration's id (drawn by the caller). */
  id: string;
  /** Teams checked to exist and hold data; eligibility is checked here, inside the transaction. */
  teams: string[];
  name: string;
  /** Entries in canonical form (`normalizeAllowlist`). */
  allowlist: string[];
  /** Active integrations an organization (or a team outside one) may have. */
  activeIntegrations: number;
  key: StoredKey;
  now: number;
}

/** Creates an integration with its first key after checking every team's eligibility. */
export async function createIntegration(tx: WriteTx, input: CreateIntegration): Promise<IntegrationSummary> {
  const { id, teams, now } = input;
  const states = await readEligibleTeams(tx, teams);
  const organization = states[0]?.organization ?? null;
  const livemode = states.every((t) => t.livemode);
  if (!livemode && states.some((t) => t.livemode)) {
    throw new AdminError('mixed_livemode', 'an integration cannot mix live and example teams');
  }
  const parent = organization ?? (teams[0] as string);
  const siblings = await tx.findEntities<IntegrationState>('integration', { parent });
  const active = siblings.filter((s) => s.state.status === 'active').length;
  if (active >= input.activeIntegrations) {
    throw new AdminError(
      'too_many_integrations',
      `${parent} already has ${active} active integrations (at most ${input.activeIntegrations})`,
    );
  }
  const state: IntegrationState = {
    name: input.name,
    organization,
    teams: [...teams],
    allowlist: [...input.allowlist],
    status: 'active',
    livemode,
    createdAt: iso(now),
    revokedAt: null,
  };
  const integration: Entity<IntegrationState> = { kind: 'integration', id, team: null, parent, state };
  await tx.putEntity<IntegrationState>(integration);
  await putKey(tx, id, input.key, now);
  return summarizeIntegration(tx, integration, now);
}

async function readEligibleTeams(tx: WriteTx, teams: readonly string[]): Promise<TeamState[]> {
  const states: TeamState[] = [];
  for (const id of teams) {
    const team = await tx.getEntity<TeamState>('team', id);
    if (!team) throw new AdminError('not_found', `no team ${id}`);
    const t = team.state;
    if (states.length > 0 && states[0]?.organization !== t.organization) {
      throw new AdminError('teams_span_organizations', 'the teams of an integration belong to one organization');
    }
    if (t.organization === null && teams.length > 1) {
      throw new AdminError('teams_span_organizations', `team ${id} is outside any organization: it gets its own key`);
    }
    const org = t.organization
      ? (await tx.getEntity<OrganizationState>('organization', t.organization))?.state
      : undefined;
    if (!planEntitled(org, t)) throw new AdminError('plan_not_entitled', `the plan of ${t.organization} has no API`);
    if (t.state !== 'active') throw new AdminError('team_state_restricted', `team ${id} is ${t.state}`);
    if (!t.legalSetupDone)
      throw new AdminError('legal_setup_incomplete', `team ${id} has not completed its legal setup`);
    if (t.sensitiveSector) throw new AdminError('sector_restricted', `team ${id} is in a sensitive sector`);
    states.push(t);
  }
  return states;
}

/** Revokes an integration and every key of it. Irreversible. */
export async function revokeIntegration(tx: WriteTx, input: { id: string; now: number }): Promise<IntegrationSummary> {
  const { id, now } = input;
  const integration = await tx.getEntity<IntegrationState>('integration', id);
  if (!integration) throw new AdminError('not_found', `no integration ${id}`);
  if (integration.state.status === 'revoked') throw new AdminError('integration_revoked', `${id} is already revoked`);
  const at = iso(now);
  const revoked = { ...integration, state: { ...integration.state, status: 'revoked' as const, revokedAt: at } };
  await tx.putEntity(revoked);
  for (const key of await tx.findEntities<ApiKeyState>('api_key', { parent: id })) {
    if (key.state.status !== 'revoked') {
      await tx.putEntity({ ...key, state: { ...key.state, status: 'revoked', revokedAt: at } });
    }
  }
  return summarizeIntegration(tx, revoked, now);
}

export const ALLOWLIST_ACTIONS = ['set', 'add', 'remove'] as const;
export type AllowlistAction = (typeof ALLOWLIST_ACTIONS)[number];

export interface ChangeAllowlist {
  id: string;
  action: AllowlistAction;
  entries: string[];
  allowlistSize: number;
}

/** Replaces, extends or shrinks an integration's allowlist; returns the new list. */
export async function changeAllowlist(tx: WriteTx, input: ChangeAllowlist): Promise<string[]> {
  const { id, action, entries, allowlistSize } = input;
  const integration = await tx.getEntity<IntegrationState>('integration', id);
  if (!integration) throw new AdminError('not_found', `no integration ${id}`);
  if (integration.state.status !== 'active') throw new AdminError('integration_revoked', `${id} is revoked`);
  const current = integration.state.allowlist;
  let next: string[];
  if (action === 'set') next = normalizeAllowlist(entries, allowlistSize);
  else if (action === 'add') next = normalizeAllowlist([...current, ...entries], allowlistSize);
  else {
    const gone = new Set(entries.map(normalizeAllowlistEntry));
    next = current.filter((entry) => !gone.has(entry));
  }
  await tx.putEntity({ ...integration, state: { ...integration.state, allowlist: next } });
  return next;
}

async function activeIntegration(tx: WriteTx, integrationId: string): Promise<Entity<IntegrationState>> {
  const integration = await tx.getEntity<IntegrationState>('integration', integrationId);
  if (!integration) throw new AdminError('not_found', `no integration ${integrationId}`);
  if (integration.state.status !== 'active') {
    throw new AdminError('integration_revoked', `integration ${integrationId} is revoked`);
  }
  return integration;
}

export interface RollKey {
  integration: string;
  grace: GracePeriod;
  /** The old key leaked: revoke it now instead of giving it a grace period. */
  compromised: boolean;
  key: StoredKey;
  now: number;
}

/**
 * Rolls an integration's key (key lifecycle table): the active key enters its grace period (or is revoked
 * at once when compromised); a key still in grace from an earlier roll is revoked; the new key is stored.
 */
export async function rollKey(
  tx: WriteTx,
  input: RollKey,
): Promise<{ keyId: string; last4: string; oldKeyId: string | null; graceEndsAt: string | null }> {
  const { integration, now } = input;
  await activeIntegration(tx, integration);
  let oldKeyId: string | null = null;
  let graceEndsAt: string | null = null;
  for (const old of await tx.findEntities<ApiKeyState>('api_key', { parent: integration })) {
    const status = effectiveKeyStatus(old.state, now);
    if (status === 'grace') {
      await tx.putEntity({ ...old, state: { ...old.state, status: 'revoked', revokedAt: iso(now) } });
    } else if (status === 'active') {
      oldKeyId = old.id;
      const state: ApiKeyState = input.compromised
        ? { ...old.state, status: 'revoked', revokedAt: iso(now) }
        : { ...old.state, status: 'grace', graceEndsAt: iso(now + GRACE_MS[input.grace]) };
      graceEndsAt = state.graceEndsAt;
      await tx.putEntity({ ...old, state });
    }
  }
  await putKey(tx, integration, input.key, now);
  return { keyId: input.key.keyId, last4: input.key.last4, oldKeyId, graceEndsAt };
}

/** Ends the grace period of the old key now: it is revoked (`401 invalid_credentials`). */
export async function endOldKey(
  tx: WriteTx,
  input: { integration: string; now: number },
): Promise<{ revoked: string[] }> {
  const { integration, now } = input;
  await activeIntegration(tx, integration);
  const revoked: string[] = [];
  for (const old of await tx.findEntities<ApiKeyState>('api_key', { parent: integration })) {
    if (effectiveKeyStatus(old.state, now) !== 'grace') continue;
    await tx.putEntity({ ...old, state: { ...old.state, status: 'revoked', revokedAt: iso(now) } });
    revoked.push(old.id);
  }
  if (revoked.length === 0) throw new AdminError('no_key_in_grace', `integration ${integration} has no key in grace`);
  return { revoked };
}
