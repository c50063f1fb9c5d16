import { ApiError } from '../errors/catalogue.js';
import type { RecordKind } from '../schemas/enums.js';
import type { JsonPage, ListFilter, Store } from '../store/store.js';

// Reading stored JSON for the routes: keyset pages, whole never-paged lists, single records.

/** Items a never-paged list sets aside up front; settled with the real count. */
export const NEVER_PAGED_RESERVATION = 100;
const WHOLE_LIST_BATCH = 1000;

/** One keyset page, joined by the store (one statement, whether another page follows included). */
export function readPage(
  store: Store,
  team: string,
  kind: RecordKind,
  filter: ListFilter | undefined,
  after: number,
  limit: number,
): Promise<JsonPage> {
  return store.listPage({ team, kind, ...(filter ? { filter } : {}), after, limit });
}

/** Every live record of a kind in a team, for the lists that are never paged. */
export async function readAll(store: Store, team: string, kind: RecordKind): Promise<string[]> {
  const out: string[] = [];
  let after = 0;
  for (;;) {
    const rows = await store.listRecords({ team, kind, after, limit: WHOLE_LIST_BATCH });
    for (const row of rows) out.push(row.json);
    const last = rows[rows.length - 1];
    if (rows.length < WHOLE_LIST_BATCH || !last) return out;
    after = last.seq;
  }
}

/** A live record the key may read, or `404 resource_missing` (absent, removed or another team's). */
export async function readableRecord(
  store: Store,
  kind: RecordKind,
  id: string,
  teams: readonly string[],
): Promise<{ team: string; json: string }> {
  const record = await store.getRecord(kind, id);
  if (!record || record.json === null || record.removed !== null || !teams.includes(record.team)) {
    throw new ApiError('resource_missing');
  }
  return { team: record.team, json: record.json };
}

/** The binding of a single-record endpoint: its path id read as a record of `kind` the key may read. */
export function recordById(kind: RecordKind) {
  return (deps: { store: Store }, id: string, principal: { teams: readonly string[] }) =>
    readableRecord(deps.store, kind, id, principal.teams);
}

/** The handler of a single-record endpoint: the stored JSON as it is (not counted toward the quota). */
export async function storedRecord({ record }: { record: { json: string } }): Promise<{ json: string; items: number }> {
  return { json: record.json, items: 0 };
}
