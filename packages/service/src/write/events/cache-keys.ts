// The keys CachedTx files entities, records and list answers under, and the small helpers around them.

/** A list query of `findEntities`: by team, by parent, or both. */
export type By = { team?: string; parent?: string };

/** The key of an entity or a record in the cache. */
export const entityKey = (kind: string, id: string) => `${kind}\u0000${id}`;
/** The key of a cached `findEntities` answer: the kind and the team and parent it was asked for. */
export const listKey = (kind: string, by: { team?: string | null; parent?: string | null }) =>
  `${kind}\u0000${by.team ?? '\u0001'}\u0000${by.parent ?? '\u0001'}`;

/** The cached lists an entity with this team and parent belongs to (`findEntities` matches non-null values only). */
export function listKeysOf(kind: string, team: string | null, parent: string | null): string[] {
  const keys = [listKey(kind, {})];
  if (team !== null) keys.push(listKey(kind, { team }));
  if (parent !== null) keys.push(listKey(kind, { parent }));
  if (team !== null && parent !== null) keys.push(listKey(kind, { team, parent }));
  return keys;
}

/** An entity's or a record's kind and id. */
export type Key<K> = { kind: K; id: string };

/** Appends a value to the list a map holds under the key. */
export function appendTo(map: Map<string, string[]>, key: string, value: string): void {
  const values = map.get(key);
  if (values) values.push(value);
  else map.set(key, [value]);
}

/** The keys without repeats, in the order of their last mention. */
export function unique<K extends string>(keys: readonly Key<K>[]): Key<K>[] {
  const seen = new Map<string, Key<K>>();
  for (const k of keys) seen.set(entityKey(k.kind, k.id), k);
  return [...seen.values()];
}
