import type { CursorScope } from '../../cursor-codec.js';
import { ApiError } from '../../errors/catalogue.js';
import { listBytes } from '../../list-envelope.js';
import type { RecordKind } from '../../schemas/enums.js';
import { DEFAULT_PAGE_SIZE } from '../../schemas/params.js';
import type { ListFilter } from '../../store/store.js';
import type { Answer, HttpDeps } from '../context.js';
import { decodeListCursor, encodeListCursor } from '../cursor.js';
import type { EndpointCall } from '../endpoint.js';
import { readPage } from '../listing.js';

type Query = Record<string, unknown>;

export interface PagedListSpec {
  kind: RecordKind;
  /** The filter a validated query asks for (throws `invalid_request` for a forbidden combination). */
  filterOf(query: Query): ListFilter | undefined;
  /** Extra check of a decoded cursor (conversations: the conversation it points at must not be erased). */
  checkCursor?(deps: HttpDeps, id: string): Promise<void>;
}

/** A cursor must come back with the same filter; the filter is part of what it is signed for. */
export function filterKey(filter: ListFilter | undefined): string {
  return filter ? `${filter.by}=${filter.value}` : '';
}

/**
 * The parameter check and handler of a paged list of one record kind of the request's team
 * (`Service-Team`), keyset by `seq`; the endpoint's name is part of what its cursors are signed for.
 */
export function pagedList(spec: PagedListSpec) {
  return {
    // A forbidden filter combination answers 400 before the charge, like any other bad parameter.
    checkParams: ({ query }: { query: unknown }) => {
      spec.filterOf(query as Query);
    },
    handle: async ({
      endpoint,
      deps,
      team,
      query: raw,
    }: EndpointCall<unknown, unknown, unknown, unknown>): Promise<Answer> => {
      const { store, cursors, pages } = deps;
      const query = raw as Query;
      const filter = spec.filterOf(query);
      const limit = (query.limit as number | undefined) ?? DEFAULT_PAGE_SIZE;
      const scope: CursorScope = { endpoint: endpoint.name, team, filter: filterKey(filter) };
      let after = 0;
      if (typeof query.cursor === 'string') {
        const position = decodeListCursor(cursors, scope, query.cursor);
        if (spec.checkCursor) await spec.checkCursor(deps, position.id);
        after = position.seq;
      }
      const cacheKey = `${endpoint.name}\u0000${scope.team}\u0000${scope.filter}\u0000${after}\u0000${limit}`;
      // The head first, then the rows (see page-cache.ts for why this order makes the cache exact).
      const head = pages.enabled ? await store.feedHead(team) : 0;
      const cached = pages.enabled ? pages.get(cacheKey, head) : undefined;
      if (cached) return { json: cached.body, items: cached.items };
      const page = await readPage(store, team, spec.kind, filter, after, limit);
      const { last } = page;
      const next =
        page.hasMore && last
          ? encodeListCursor(cursors, scope, { seq: last.seq, id: spec.checkCursor ? last.id : '' })
          : null;
      const bytes = listBytes(page, next);
      if (pages.enabled) pages.set(cacheKey, head, bytes, page.count);
      return { json: bytes, items: page.count };
    },
  };
}

/** The first of `names` present in the query, in the order sent; a second one is `400 invalid_request`. */
export function singleFilter(query: Record<string, unknown>, names: readonly string[]): string | undefined {
  let found: string | undefined;
  for (const key of Object.keys(query)) {
    if (!names.includes(key)) continue;
    if (found !== undefined) throw new ApiError('invalid_request', { param: key });
    found = key;
  }
  return found;
}
