import type { Store } from '../store/store.js';
import { holdsDataMetaKey } from '../write/commands/meta-state.js';
import { planEntitled, type TeamAccessState } from '../write/commands/team-access.js';
import type { OrganizationState } from '../write/types.js';

// Eligibility of a team for a key (spec "What the service does" 7). Checked when an integration is created
// (write/commands/access-commands.ts) and, for the parts that have an error code, at request time. Reads the write
// side's team and organization entities through the fields access control needs (write/commands/team-access.ts).

/** Request-time refusal of a team, in the order the checks run (docs/auth.md). */
export type TeamRefusal = 'plan_not_entitled' | 'team_state_restricted' | 'sector_restricted';

/** What refuses a team at request time, or null. Legal setup not completed reads as a restricted state. */
export function teamRefusal(team: TeamAccessState, org: OrganizationState | undefined): TeamRefusal | null {
  if (!planEntitled(org, team)) return 'plan_not_entitled';
  if (team.state !== 'active' || !team.legalSetupDone) return 'team_state_restricted';
  if (team.sensitiveSector) return 'sector_restricted';
  return null;
}

/** A team holds data when it has at least one lead or client record, or the operator said so. */
export async function teamHoldsData(store: Store, team: string): Promise<boolean> {
  if ((await store.getMeta(holdsDataMetaKey(team))) === 'yes') return true;
  const rows = await store.listRecords({ team, kind: 'lead', after: 0, limit: 1 });
  return rows.length > 0;
}
