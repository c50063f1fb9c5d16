import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { EndpointName } from '../../access/endpoints.js';
import { ApiError } from '../../errors/catalogue.js';
import type { RecordKind, Scope } from '../../schemas/enums.js';
import { DEFAULT_PAGE_SIZE } from '../../schemas/params.js';
import type { ListFilter } from '../../store/store.js';
import type { App, HttpDeps } from '../context.js';
import { answered, headerTeam, listBytes, principalOf } from '../context.js';
import { type CursorScope, decodeListCursor, encodeListCursor } from '../cursor.js';
import { readPage } from '../listing.js';
import { listOf, responses, secured } from '../openapi.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export interface PagedListSpec {
  url: string;
  endpoint: EndpointName;
  kind: RecordKind;
  scope: Scope;
  item: TSchema;
  listId: string;
  summary: string;
  querystring: TSchema;
  /** The filter a validated query asks for (throws `invalid_request` for a forbidden combination). */
  filterOf(query: Record<string, unknown>): ListFilter | undefined;
  /** Extra check of a decoded cursor (conversations: the conversation it points at must not be erased). */
  checkCursor?(deps: HttpDeps, id: string): Promise<void>;
}

/** A cursor must come back with the same filter; the filter is part of what it is signed for. */
export function filterKey(filter: ListFilter | undefined): string {
  return filter ? `${filter.by}=${filter.value}` : '';
}

/** A paged list of one record kind of the request's team (Service-Team), keyset by `seq`. */
export function registerPagedList(app: App, deps: HttpDeps, spec: PagedListSpec): void {
  const { store, access, cursors, pages } = deps;
  app.get(
    spec.url,
    {
      config: {
        endpoint: {
          endpoint: spec.endpoint,
          auth: true,
          scope: spec.scope,
          charge: { rateClass: 'sync', quota: true, items: 'limit' },
          // A forbidden filter combination answers 400 before the charge, like any other bad parameter.
          checkParams: (request) => {
            spec.filterOf(request.query as Record<string, unknown>);
          },
        },
      },
      schema: {
        summary: spec.summary,
        querystring: spec.querystring,
        response: responses(listOf(spec.item, spec.listId), true),
        ...secured(true),
      },
    },
    async (request: FastifyRequest, reply) => {
      const principal = principalOf(request);
      const query = request.query as Record<string, unknown>;
      const filter = spec.filterOf(query);
      const team = headerTeam(request, principal);
      await access.checkTeam(principal, team);
      const limit = (query.limit as number | undefined) ?? DEFAULT_PAGE_SIZE;
      const scope: CursorScope = { endpoint: spec.endpoint, team, filter: filterKey(filter) };
      let after = 0;
      if (typeof query.cursor === 'string') {
        const position = decodeListCursor(cursors, scope, query.cursor);
        if (spec.checkCursor) await spec.checkCursor(deps, position.id);
        after = position.seq;
      }
      const cacheKey = `${spec.endpoint}\u0000${scope.team}\u0000${scope.filter}\u0000${after}\u0000${limit}`;
      const body = await answered(request, async () => {
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
      });
      return reply.header('content-type', JSON_TYPE).send(body);
    },
  );
}

/** The first of `names` present in the query, in the order sent; a second one is `400 invalid_request`. */
export function singleFilter(query: Record<string, unknown>, names: readonly string[]): string | undefined {
  let found: string | undefined;
  for (const key of Object.keys(query)) {
    if (!names.includes(key)) continue;
    if (found !== undefined) throw new ApiError('invalid_request', key);
    found = key;
  }
  return found;
}
