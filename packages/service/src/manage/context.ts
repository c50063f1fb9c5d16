import { iso } from '../clock.js';
import type { InternalContext } from '../http/internal-surface.js';
import type { Store } from '../store/store.js';
import type { LimiterCounters } from '../usage/usage-reads.js';
import type { Actor, LastUse, LockoutControl, ManageContext } from './action.js';

// The context an action runs with on the internal listener (the management API and the console): the
// listener's store, clock and limits, the caller as actor, the process's lockout counters when the listener
// has them, and the last uses the request log records (usage/).

/** The internal listener's context; `lockouts` and `counters` override those of `access` (tests). */
export type ManageSurfaceContext = InternalContext & {
  lockouts?: LockoutControl | undefined;
  counters?: LimiterCounters | undefined;
};

export function manageContextFor(context: ManageSurfaceContext, actor: Actor): ManageContext {
  return {
    store: context.store,
    clock: context.clock,
    limits: context.limits,
    actor,
    // The API's access control of this process: its lockouts and rate counters (Redis's when shared).
    lockouts: context.lockouts ?? context.access?.keyLockouts,
    counters: context.counters ?? context.access,
    lastUse: recordedLastUse(context.store),
  };
}

/** When and from where each key was last used, as the request log recorded it. */
export function recordedLastUse(store: Store): LastUse {
  return async (keyIds) => {
    const found = keyIds.length === 0 ? [] : await store.lastUses('key', keyIds);
    return new Map(found.map((use) => [use.id, { at: iso(use.at), address: use.address }]));
  };
}
