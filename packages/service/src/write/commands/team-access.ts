import type { OrganizationState, TeamState } from '../types.js';

// The access-related fields of teams and organizations: the operator commands check them when they write
// (write/commands/access-commands.ts) and access control checks them at request time (access/eligibility.ts).

/** The access-related fields of a `team` entity's state (the write side's `TeamState`). */
export type TeamAccessState = Pick<
  TeamState,
  'organization' | 'state' | 'legalSetupDone' | 'sensitiveSector' | 'livemode'
> &
  Partial<Pick<TeamState, 'name'>>;

/** An organization's plan includes the API, or API access was agreed. A team outside any organization is
 * billed on its own and has no organization plan to check: its `billing_only` / `api_paused` states cover it. */
export function planEntitled(org: OrganizationState | undefined, team: TeamAccessState): boolean {
  if (team.organization === null) return true;
  if (!org) return false;
  return org.plan === 'api_included' || org.apiAgreed;
}
