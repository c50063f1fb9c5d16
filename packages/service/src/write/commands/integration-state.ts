import type { Entity, Store, WriteTx } from '../../store/store.js';
import { type ApiKeyState, effectiveKeyStatus, type KeyStatus } from './key-state.js';

// The state of an `integration` entity (id `prn_...`, parent = the organization, or the team when outside
// any). The commands that change it (write/commands/access-commands.ts), keys, feed capture and the request-time
// checks read it, so it sits below all of them.

export const INTEGRATION_STATUSES = ['active', 'revoked'] as const;
export type IntegrationStatus = (typeof INTEGRATION_STATUSES)[number];

export interface IntegrationState {
  name: string;
  /** The organization the teams belonged to at creation (null: one team outside any organization). */
  organization: string | null;
  teams: string[];
  allowlist: string[];
  status: IntegrationStatus;
  livemode: boolean;
  createdAt: string;
  revokedAt: string | null;
}

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

export async function summarizeIntegration(
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
