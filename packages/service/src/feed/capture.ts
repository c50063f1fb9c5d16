import { ApiError } from '../errors/catalogue.js';
import type { Store } from '../store/store.js';
import type { TeamState } from '../write/types.js';

// Capture as the API sees it: a team's data is prepared once, the first time the team is added to any
// key (the preparing job is write/commands/capture.ts). Until then its team endpoints answer 409
// capture_not_ready and its single records 404 resource_missing.

/** Teams this process has seen prepared (stored teams only): capture is once per team, so the answer never changes. */
const prepared = new WeakMap<object, Set<string>>();

function preparedOf(store: object): Set<string> {
  let set = prepared.get(store);
  if (!set) {
    set = new Set();
    prepared.set(store, set);
  }
  return set;
}

/**
 * True when the team is prepared. A team without an entity has nothing to prepare (access answers
 * for it); a team entity written without the field (by a tool that predates capture) counts as prepared.
 */
export async function isCaptured(store: Pick<Store, 'getEntity'>, team: string): Promise<boolean> {
  const cache = preparedOf(store);
  if (cache.has(team)) return true;
  const entity = await store.getEntity<TeamState>('team', team);
  if (entity && entity.state.capturedAt === null) return false;
  if (entity) cache.add(team);
  return true;
}

/** For team endpoints (lists, the feed): `409 capture_not_ready` until the team is prepared. */
export async function assertCaptured(store: Pick<Store, 'getEntity'>, team: string): Promise<void> {
  if (!(await isCaptured(store, team))) throw new ApiError('capture_not_ready');
}

/** For single records: a record of a team not yet prepared is `404 resource_missing`. */
export async function assertRecordCaptured(store: Pick<Store, 'getEntity'>, team: string): Promise<void> {
  if (!(await isCaptured(store, team))) throw new ApiError('resource_missing');
}
