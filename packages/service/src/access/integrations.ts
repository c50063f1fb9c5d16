import type { Clock } from '../clock.js';
import { AdminError } from '../errors/admin-error.js';
import { newId } from '../ids.js';
import { DEFAULT_LIMITS, type Limits } from '../limits.js';
import type { Store } from '../store/store.js';
import type { AllowlistAction } from '../write/commands/access-commands.js';
import { normalizeAllowlist } from '../write/commands/allowlist-entries.js';
import { requestCapture } from '../write/commands/capture.js';
import { runCommand } from '../write/commands/commands.js';
import {
  type IntegrationState,
  type IntegrationSummary,
  summarizeIntegration,
} from '../write/commands/integration-state.js';
import { drawKey } from '../write/commands/key-state.js';
import { teamHoldsData } from './eligibility.js';
import { getPepper } from './keys.js';

// Integrations: one team, or an explicit list of teams of one organization (never extended on its own).
// The changes are write commands (write/commands/access-commands.ts); what is checked before them and the reads
// stay here.

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
  const drawn = drawKey(await getPepper(store));
  const integration = await runCommand(store, 'integration.create', {
    id: newId('integration'),
    teams,
    name,
    allowlist,
    activeIntegrations: limits.activeIntegrations,
    key: { keyId: drawn.keyId, digest: drawn.digest, last4: drawn.last4 },
    now: clock.now(),
  });
  // A team's data is prepared the first time any key names it (docs/feed.md, Capture).
  await requestCapture(store, clock, teams);
  return { integration, key: drawn.key };
}

/** One integration as the operator sees it. */
export async function getIntegration(store: Store, clock: Clock, id: string): Promise<IntegrationSummary> {
  const integration = await store.getEntity<IntegrationState>('integration', id);
  if (!integration) throw new AdminError('not_found', `no integration ${id}`);
  return summarizeIntegration(store, integration, clock.now());
}

/** Integrations of an organization (or of a team outside one); every one when `parent` is omitted. */
export async function listIntegrations(store: Store, clock: Clock, parent?: string): Promise<IntegrationSummary[]> {
  const rows = await store.findEntities<IntegrationState>('integration', parent ? { parent } : {});
  return Promise.all(rows.map((row) => summarizeIntegration(store, row, clock.now())));
}

/** Revokes an integration and every key of it. Irreversible. */
export async function revokeIntegration(store: Store, clock: Clock, id: string): Promise<IntegrationSummary> {
  return runCommand(store, 'integration.revoke', { id, now: clock.now() });
}

/** Replaces, extends or shrinks an integration's allowlist; returns the new list. */
export async function changeAllowlist(
  store: Store,
  id: string,
  action: AllowlistAction,
  entries: readonly string[],
  limits: Pick<Limits, 'allowlistSize'> = DEFAULT_LIMITS,
): Promise<string[]> {
  return runCommand(store, 'integration.allowlist', {
    id,
    action,
    entries: [...entries],
    allowlistSize: limits.allowlistSize,
  });
}
