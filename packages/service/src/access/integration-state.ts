// The state of an `integration` entity. Keys, feed capture and the request-time checks read it, and the
// commands that change it (integrations.ts) call keys and capture: so it sits below all of them.

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
