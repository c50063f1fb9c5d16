import type { AccessControl, Principal } from '../access/access-control.js';
import { ApiError } from '../errors/catalogue.js';
import { isCaptured } from '../feed/capture.js';
import type { Store } from '../store/store.js';

// The last step of the pipeline before the handler (pipeline.ts binds the team, then runs this): the
// team's own refusals, the sandbox faults of an example team, then capture (feed/capture.ts). What a team
// not yet prepared answers is the endpoint's declared rule: a team endpoint 409 capture_not_ready, a record
// read by id 404 resource_missing.

/** What an endpoint answers while its team is not prepared (docs/feed.md, capture). */
export type WhileUncaptured = 'capture_not_ready' | 'resource_missing';

/** Checks `team` for an endpoint: throws the refusal, `capability_disabled` or the endpoint's capture answer. */
export type TeamGate = (
  principal: Principal,
  team: string,
  endpoint: { name: string; whileUncaptured: WhileUncaptured },
) => Promise<void>;

export function teamGate(
  access: Pick<AccessControl, 'checkTeam' | 'sandboxFaults'>,
  store: Pick<Store, 'getEntity'>,
): TeamGate {
  return async (principal, team, endpoint) => {
    await access.checkTeam(principal, team);
    // Sandbox faults of an example team (docs/testing-your-consumer.md), after the team's own refusals.
    const faults = await access.sandboxFaults?.(principal, team);
    if (faults?.capabilitiesOff.includes(endpoint.name)) throw new ApiError('capability_disabled');
    if (!(await isCaptured(store, team)) || faults?.notReady) throw new ApiError(endpoint.whileUncaptured);
  };
}
