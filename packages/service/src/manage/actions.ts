import type { AnyAction } from './action.js';
import { INTEGRATION_ACTIONS } from './actions/integrations.js';
import { OPERATE_ACTIONS } from './actions/operate.js';
import { ORGANIZATION_ACTIONS } from './actions/organizations.js';
import { USAGE_ACTIONS } from './actions/usage.js';

/** Every action of the management plane, by name. */
export const ACTIONS: ReadonlyMap<string, AnyAction> = new Map(
  [...ORGANIZATION_ACTIONS, ...INTEGRATION_ACTIONS, ...OPERATE_ACTIONS, ...USAGE_ACTIONS].map((a) => [
    a.name,
    a as AnyAction,
  ]),
);
