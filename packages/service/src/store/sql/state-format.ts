import type { EntityKind } from '../types.js';

// How the write side's state is stored (`entities.state`). The state of a kind listed below is stored as the
// array of its fields' values, in the order listed, without the field names: about half the bytes of a lead's
// state. Nested values keep their field names. A state of a listed kind whose fields are not exactly those
// listed (a field missing, undefined or unknown, or no object at all) is stored as an array of one item, the
// state itself: every list has more fields than one. The write side stored objects before, and an object is
// read as it is, so rows written before need no migration. A state of a kind not listed is stored as it is.
// A new field of a listed kind goes at the end of its list: an array written before reads it as absent.

/** The fields of each compact kind, in the order the write side builds them (write/types.ts). */
const FIELDS: Partial<Record<EntityKind, readonly string[]>> = {
  lead: [
    'name',
    'surname',
    'email',
    'company',
    'phone',
    'phoneStatus',
    'status',
    'statusSetBy',
    'archiveReason',
    'archivedFromStatus',
    'permissions',
    'mergedInto',
    'transferredTo',
    'transferredFrom',
    'revivedAt',
    'pipelineCleared',
    'convertedAt',
    'valueAtConversion',
    'priority',
    'tags',
    'board',
    'stage',
    'assignees',
    'estimatedValue',
    'source',
    'sourceChannel',
    'sourceDetail',
    'sourceProvenance',
    'createdAt',
    'originalCapture',
    'internal',
    'activitySeq',
  ],
  submission: ['receivedAt', 'submittedAt', 'externalProvider', 'campaign', 'ad', 'adSet', 'form', 'deleted', 'seq'],
  call: ['lead', 'line', 'direction', 'startedAt', 'durationSeconds', 'live', 'carrierResult', 'verdict'],
  conversation: ['lead', 'channel', 'status', 'assignees', 'startedAt', 'closedAt', 'createdAt', 'messageSeq'],
  message: ['direction', 'purpose', 'failed', 'imported', 'visitorTurn', 'at', 'seq', 'receipt'],
  booking: ['lead', 'service', 'status', 'startsAt', 'endsAt', 'assignees', 'cancelledAt', 'createdAt'],
};

/** The kinds whose state is stored as an array of values. */
export const COMPACT_STATE_KINDS = Object.keys(FIELDS) as EntityKind[];

/** The value stored for an entity's state, before it is serialized. */
export function storedState(kind: EntityKind, state: unknown): unknown {
  const fields = FIELDS[kind];
  if (!fields) return state;
  if (typeof state !== 'object' || state === null || Array.isArray(state)) return [state];
  const s = state as Record<string, unknown>;
  if (Object.keys(s).length !== fields.length) return [state];
  const values: unknown[] = new Array(fields.length);
  for (let i = 0; i < fields.length; i++) {
    const value = s[fields[i] as string];
    if (value === undefined) return [state];
    values[i] = value;
  }
  return values;
}

/** An entity's state from its parsed stored value. */
export function readState(kind: EntityKind, stored: unknown): unknown {
  const fields = FIELDS[kind];
  if (!fields || !Array.isArray(stored)) return stored;
  if (stored.length === 1) return stored[0];
  const state: Record<string, unknown> = {};
  const n = Math.min(stored.length, fields.length);
  for (let i = 0; i < n; i++) state[fields[i] as string] = stored[i];
  return state;
}
