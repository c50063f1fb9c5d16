import { AdminError } from '../errors/admin-error.js';
import type { Store } from '../store/store.js';
import { runCommand } from '../write/commands/commands.js';
import { isOn, parseEndpointList, SWITCH_KEYS } from '../write/commands/meta-state.js';
import { ENDPOINT_NAMES, isEndpointName } from './endpoints.js';

// Operator switches kept in the meta table (keys and parsers in write/commands/meta-state.ts): `api_disabled`
// (every endpoint answers 503 api_disabled) and `capability_disabled` (endpoint names answering 403
// capability_disabled). Running processes see a change within `limits.keyCacheMs`.

export interface Switches {
  apiDisabled: boolean;
  capabilitiesDisabled: string[];
}

export async function readSwitches(store: Store): Promise<Switches> {
  return {
    apiDisabled: isOn(await store.getMeta(SWITCH_KEYS.apiDisabled)),
    capabilitiesDisabled: parseEndpointList(await store.getMeta(SWITCH_KEYS.capabilityDisabled)),
  };
}

export async function setApiDisabled(store: Store, disabled: boolean): Promise<Switches> {
  await runCommand(store, 'switch.api_disabled', { disabled });
  return readSwitches(store);
}

/** Switches one endpoint (its name as the HTTP layer passes it, e.g. `leads.list`) off or back on. */
export async function setCapabilityDisabled(store: Store, endpoint: string, disabled: boolean): Promise<Switches> {
  if (!isEndpointName(endpoint)) {
    throw new AdminError('invalid_argument', `unknown endpoint ${endpoint} (known: ${ENDPOINT_NAMES.join(', ')})`);
  }
  await runCommand(store, 'switch.capability_disabled', { endpoint, disabled });
  return readSwitches(store);
}
