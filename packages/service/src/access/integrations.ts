import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { DEFAULT_LIMITS, type Limits } from '../config.js';
import { requestCapture } from '../feed/capture.js';
import { newId } from '../ids.js';
import type { Entity, Store, WriteTx } from '../store/store.js';
import type { OrganizationState } from '../write/types.js';
import { AdminError } from './admin-error.js';
import { normalizeAllowlist, normalizeAllowlistEntry } from './allowlist.js';
import { planEntitled, type TeamAccessState, teamHoldsData } from './eligibility.js';
import type { IntegrationState } from './integration-state.js';
import { type ApiKeyState, effectiveKeyStatus, getPepper, issueKey, type KeyStatus } from './keys.js';

// Integrations: one team, or an explicit list of teams of one organization (never extended on its own).
// Entity `integration` (id `prn_...`, parent = the organization, or the team when outside any).

export interface KeySummary {
  id: string;
  last4: string;
  status: KeyStatus;
  createdAt: string;
  graceEndsAt: string | null;
}

/** What the operator commands show of an integration (never a key or digest). */
export interface IntegrationSummary extends IntegrationState {
  id: string;
  keys: KeySummary[];
}

export interface CreateIntegrationInput {
  teams: readonly string[];
  name: string;
  allowlist?: readonly string[];
  limits?: Pick<Limits, 'activeIntegrations' | 'allowlistSize'>;
}

/** Checks eligibility and creates an integration with its first key; the key is returned once. */
export async function createIntegration(
  store: Store,
  clock: Clock,
  input: CreateIntegrationInput,
): Promise<{ integration: IntegrationSummary; key: string }> {
  const limits = input.limits ?? DEFAULT_LIMITS;
  const name = input.name.trim();
  if (name.length === 0) throw new AdminError('invalid_argument', 'an integration needs a name');
  const teams = [...new Set(input.teams)];
  if (teams.length === 0) throw new AdminError('invalid_argument', 'an integration covers at least one team');
  const allowlist = normalizeAllowlist(input.allowlist ?? [], limits.allowlistSize);
  for (const team of teams) {
    if (!(await store.getEntity('team', team))) throw new AdminError('not_found', `no team ${team}`);
    if (!(await teamHoldsData(store, team))) {
      throw new AdminError('holds_no_data', `team ${team} holds no data (no lead yet, no operator override)`);
    }
  }
  const pepper = await getPepper(store);
  const created = await store.write(async (tx) => {
    const states = await readEligibleTeams(tx, teams);
    const organization = states[0]?.organization ?? null;
    const livemode = states.every((t) => t.livemode);
    if (!livemode && states.some((t) => t.livemode)) {
      throw new AdminError('mixed_livemode', 'an integration cannot mix live and example teams');
    }
    const parent = organization ?? teams[0]!;
    const siblings = await tx.findEntities<IntegrationState>('integration', { parent });
    const active = siblings.filter((s) => s.state.status === 'active').length;
    if (active >= limits.activeIntegrations) {
      throw new AdminError(
        'too_many_integrations',
        `${parent} already has ${active} active integrations (at most ${limits.activeIntegrations})`,
      );
    }
    const now = clock.now();
    const id = newId('integration');
    const state: IntegrationState = {
      name,
      organization,
      teams,
      allowlist,
      status: 'active',
      livemode,
      createdAt: iso(now),
      revokedAt: null,
    };
    await tx.putEntity<IntegrationState>({ kind: 'integration', id, team: null, parent, state });
    const { key } = await issueKey(tx, pepper, id, now);
    return { integration: await summarize(tx, { kind: 'integration', id, team: null, parent, state }, now), key };
  });
  // A team's data is prepared the first time any key names it (docs/feed.md, Capture).
  await requestCapture(store, clock, teams);
  return created;
}

async function readEligibleTeams(tx: WriteTx, teams: readonly string[]): Promise<TeamAccessState[]> {
  const states: TeamAccessState[] = [];
  for (const id of teams) {
    const team = await tx.getEntity<TeamAccessState>('team', id);
    if (!team) throw new AdminError('not_found', `no team ${id}`);
    const t = team.state;
    if (states.length > 0 && states[0]!.organization !== t.organization) {
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

async function summarize(
  reader: Pick<Store, 'findEntities'> | Pick<WriteTx, 'findEntities'>,
  integration: Entity<IntegrationState>,
  now: number,
): Promise<IntegrationSummary> {
  const keys = await reader.findEntities<ApiKeyState>('api_key', { parent: integration.id });
  return {
    id: integration.id,
    ...integration.state,
    keys: keys.map((k) => ({
      id: k.id,
      last4: k.state.last4,
      status: effectiveKeyStatus(k.state, now),
      createdAt: k.state.createdAt,
      graceEndsAt: k.state.graceEndsAt,
    })),
  };
}

/** One integration as the operator sees it. */
export async function getIntegration(store: Store, clock: Clock, id: string): Promise<IntegrationSummary> {
  const integration = await store.getEntity<IntegrationState>('integration', id);
  if (!integration) throw new AdminError('not_found', `no integration ${id}`);
  return summarize(store, integration, clock.now());
}

/** Integrations of an organization (or of a team outside one); every one when `parent` is omitted. */
export async function listIntegrations(store: Store, clock: Clock, parent?: string): Promise<IntegrationSummary[]> {
  const rows = await store.findEntities<IntegrationState>('integration', parent ? { parent } : {});
  return Promise.all(rows.map((row) => summarize(store, row, clock.now())));
}

/** Revokes an integration and every key of it. Irreversible. */
export async function revokeIntegration(store: Store, clock: Clock, id: string): Promise<IntegrationSummary> {
  return store.write(async (tx) => {
    const integration = await tx.getEntity<IntegrationState>('integration', id);
    if (!integration) throw new AdminError('not_found', `no integration ${id}`);
    if (integration.state.status === 'revoked') throw new AdminError('integration_revoked', `${id} is already revoked`);
    const at = iso(clock.now());
    const revoked = { ...integration, state: { ...integration.state, status: 'revoked' as const, revokedAt: at } };
    await tx.putEntity(revoked);
    for (const key of await tx.findEntities<ApiKeyState>('api_key', { parent: id })) {
      if (key.state.status !== 'revoked') {
        await tx.putEntity({ ...key, state: { ...key.state, status: 'revoked', revokedAt: at } });
      }
    }
    return summarize(tx, revoked, clock.now());
  });
}

export const ALLOWLIST_ACTIONS = ['set', 'add', 'remove'] as const;
export type AllowlistAction = (typeof ALLOWLIST_ACTIONS)[number];

/** Replaces, extends or shrinks an integration's allowlist; returns the new list. */
export async function changeAllowlist(
  store: Store,
  id: string,
  action: AllowlistAction,
  entries: readonly string[],
  limits: Pick<Limits, 'allowlistSize'> = DEFAULT_LIMITS,
): Promise<string[]> {
  return store.write(async (tx) => {
    const integration = await tx.getEntity<IntegrationState>('integration', id);
    if (!integration) throw new AdminError('not_found', `no integration ${id}`);
    if (integration.state.status !== 'active') throw new AdminError('integration_revoked', `${id} is revoked`);
    const current = integration.state.allowlist;
    let next: string[];
    if (action === 'set') next = normalizeAllowlist(entries, limits.allowlistSize);
    else if (action === 'add') next = normalizeAllowlist([...current, ...entries], limits.allowlistSize);
    else {
      const gone = new Set(entries.map(normalizeAllowlistEntry));
      next = current.filter((entry) => !gone.has(entry));
    }
    await tx.putEntity({ ...integration, state: { ...integration.state, allowlist: next } });
    return next;
  });
}
