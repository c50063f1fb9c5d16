import type { Store } from '../store/store.js';
import { AdminError } from './admin-error.js';
import { ENDPOINT_NAMES, isEndpointName } from './endpoints.js';

// Operator switches kept in the meta table: `api_disabled` (every endpoint answers 503 api_disabled) and
// `capability_disabled` (a JSON array of endpoint names answering 403 capability_disabled). Running
// processes see a change within `limits.keyCacheMs`.

export const SWITCH_KEYS = { apiDisabled: 'api_disabled', capabilityDisabled: 'capability_disabled' } as const;

export interface Switches {
  apiDisabled: boolean;
  capabilitiesDisabled: string[];
}

export function isOn(value: string | undefined): boolean {
  return value !== undefined && ['1', 'true', 'yes', 'on'].includes(value.trim().toLowerCase());
}

/** A switch listing endpoints: a JSON array of strings, or a comma-separated list. */
export function parseEndpointList(value: string | undefined): string[] {
  if (!value) return [];
  try {
    const parsed: unknown = JSON.parse(value);
    if (Array.isArray(parsed)) return parsed.filter((v): v is string => typeof v === 'string');
  } catch {
    // Not JSON: a plain list.
  }
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export async function readSwitches(store: Store): Promise<Switches> {
  return {
    apiDisabled: isOn(await store.getMeta(SWITCH_KEYS.apiDisabled)),
    capabilitiesDisabled: parseEndpointList(await store.getMeta(SWITCH_KEYS.capabilityDisabled)),
  };
}

export async function setApiDisabled(store: Store, disabled: boolean): Promise<Switches> {
  await store.setMeta(SWITCH_KEYS.apiDisabled, disabled ? 'true' : 'false');
  return readSwitches(store);
}

/** Switches one endpoint (its name as the HTTP layer passes it, e.g. `leads.list`) off or back on. */
export async function setCapabilityDisabled(store: Store, endpoint: string, disabled: boolean): Promise<Switches> {
  if (!isEndpointName(endpoint)) {
    throw new AdminError('invalid_argument', `unknown endpoint ${endpoint} (known: ${ENDPOINT_NAMES.join(', ')})`);
  }
  await store.write(async (tx) => {
    const current = parseEndpointList(await tx.getMeta(SWITCH_KEYS.capabilityDisabled)).filter((e) => e !== endpoint);
    if (disabled) current.push(endpoint);
    await tx.setMeta(SWITCH_KEYS.capabilityDisabled, JSON.stringify(current));
  });
  return readSwitches(store);
}
