// Refusals of the operator operations (create, roll, allowlist...). Not API errors: the CLI prints them.

export const ADMIN_ERROR_CODES = [
  'not_found',
  'invalid_argument',
  'plan_not_entitled',
  'team_state_restricted',
  'legal_setup_incomplete',
  'sector_restricted',
  'holds_no_data',
  'teams_span_organizations',
  'mixed_livemode',
  'too_many_integrations',
  'integration_revoked',
  'no_key_in_grace',
  'confirmation_required',
  'live_team',
] as const;
export type AdminErrorCode = (typeof ADMIN_ERROR_CODES)[number];

export class AdminError extends Error {
  constructor(
    readonly code: AdminErrorCode,
    message: string,
    /** The input field at fault (`entries[2]`), when one is (the management API answers it as `param`). */
    readonly param?: string,
  ) {
    super(message);
    this.name = 'AdminError';
  }
}
