import type { Entity } from '../../store/store.js';

// CachedTx copies entities in and out, since callers change what they read.

/** A deep copy of a JSON value (entity state is plain JSON). */
function copy<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(copy) as T;
  const out: Record<string, unknown> = {};
  for (const key in value) out[key] = copy((value as Record<string, unknown>)[key]);
  return out as T;
}

/**
 * State fields whose value is only ever replaced whole, never changed in place (a lead's original
 * capture is frozen at creation): copies share them. It is the largest part of a lead's state.
 */
const REPLACED_WHOLE = 'originalCapture';

/** A copy of an entity's state (plain JSON), sharing what is only replaced whole. */
function copyState(state: unknown): unknown {
  if (state === null || typeof state !== 'object' || Array.isArray(state)) return copy(state);
  // A spread copies the flat fields in one go (a lead's state has over thirty), far faster than adding
  // them one by one; only nested values are copied after.
  const out: Record<string, unknown> = { ...state };
  for (const key in out) {
    const value = out[key];
    if (value !== null && typeof value === 'object' && key !== REPLACED_WHOLE) out[key] = copy(value);
  }
  return out;
}

/** A copy of an entity, for a caller that may change it. */
export const copyEntity = <S>(e: Entity<unknown>): Entity<S> => ({
  kind: e.kind,
  id: e.id,
  team: e.team,
  parent: e.parent,
  state: copyState(e.state) as S,
});
