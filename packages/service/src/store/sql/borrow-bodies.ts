import type { FeedRow, RecordRow, WriteSet } from '../types.js';

/**
 * The set's feed entries as the store writes them: an entry of the version and JSON its record row is
 * written with in the same set (and not removed there) has its body dropped, since reads take the row's.
 */
export function borrowBodies(writes: WriteSet): FeedRow[] {
  const removed = new Set(writes.removeRecords.map((r) => `${r.kind}\u0000${r.id}`));
  const rows = new Map<string, RecordRow>();
  for (const r of writes.putRecords) rows.set(`${r.kind}\u0000${r.id}`, r);
  return writes.appendFeed.map((e) => {
    const key = `${e.kind}\u0000${e.id}`;
    const row = rows.get(key);
    const borrowed = e.body !== null && row?.version === e.version && row.json === e.body && !removed.has(key);
    return borrowed ? { ...e, body: null } : e;
  });
}
