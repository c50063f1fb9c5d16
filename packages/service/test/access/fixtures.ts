import type { Store } from '../../src/store/store.js';
import type { TeamAccessState } from '../../src/write/commands/team-access.js';
import type { OrganizationState } from '../../src/write/types.js';
import { putMeta } from '../support/meta.js';

// Teams and organizations as the write side makes them, written straight into the store so access tests
// do not depend on the CRM operations.

export async function seedOrganization(
  store: Store,
  id: string,
  state: Partial<OrganizationState> = {},
): Promise<void> {
  await store.write((tx) =>
    tx.putEntity<OrganizationState>({
      kind: 'organization',
      id,
      team: null,
      parent: null,
      state: { name: id, plan: 'api_included', apiAgreed: false, ...state },
    }),
  );
}

/** An eligible team (active, legal setup done, not sensitive, live) holding data, unless overridden. */
export async function seedTeam(
  store: Store,
  id: string,
  state: Partial<TeamAccessState> = {},
  options: { holdsData?: boolean } = {},
): Promise<void> {
  await store.write((tx) =>
    tx.putEntity<TeamAccessState>({
      kind: 'team',
      id,
      team: id,
      parent: null,
      state: {
        name: id,
        organization: null,
        state: 'active',
        legalSetupDone: true,
        sensitiveSector: false,
        livemode: true,
        ...state,
      },
    }),
  );
  if (options.holdsData ?? true) await putMeta(store, `holds_data:${id}`, 'yes');
}
