import type { TSchema } from 'typebox';
import type { EndpointName } from '../../access/endpoints.js';
import { ApiError } from '../../errors/catalogue.js';
import type { IdPrefixed, RecordKind, Scope } from '../../schemas/enums.js';
import { ByLeadQuery, NoQuery, PageQuery, PathId } from '../../schemas/params.js';
import { Board, Booking, Call, Conversation } from '../../schemas/records.js';
import type { App, HttpDeps } from '../context.js';
import { answered, principalOf } from '../context.js';
import { readableRecord } from '../listing.js';
import { responses, secured } from '../openapi.js';
import { registerPagedList } from './paged-list.js';

const JSON_TYPE = 'application/json; charset=utf-8';

const byLead = (query: Record<string, unknown>) =>
  typeof query.lead === 'string' ? { by: 'lead' as const, value: query.lead } : undefined;

/** GET /v1/boards, /v1/calls, /v1/conversations, /v1/bookings and their single-record variants. */
export function registerRecordRoutes(app: App, deps: HttpDeps): void {
  registerPagedList(app, deps, {
    url: '/v1/boards',
    endpoint: 'boards.list',
    kind: 'board',
    scope: 'crm:read',
    item: Board,
    listId: 'BoardList',
    summary: 'Boards of the team with their stages in pipeline order',
    querystring: PageQuery,
    filterOf: () => undefined,
  });
  registerPagedList(app, deps, {
    url: '/v1/calls',
    endpoint: 'calls.list',
    kind: 'call',
    scope: 'calls:read',
    item: Call,
    listId: 'CallList',
    summary: 'Calls of the team, optionally of one lead',
    querystring: ByLeadQuery,
    filterOf: byLead,
  });
  registerPagedList(app, deps, {
    url: '/v1/conversations',
    endpoint: 'conversations.list',
    kind: 'conversation',
    scope: 'messages:read',
    item: Conversation,
    listId: 'ConversationList',
    summary: 'Conversations of the team (metadata only), optionally of one lead',
    querystring: ByLeadQuery,
    filterOf: byLead,
    // Spec, Paging rules: a conversations cursor is refused once its conversation was erased.
    checkCursor: async ({ store }, id) => {
      const record = await store.getRecord('conversation', id);
      if (record?.removed === 'erased') throw new ApiError('invalid_request', 'cursor');
    },
  });
  registerPagedList(app, deps, {
    url: '/v1/bookings',
    endpoint: 'bookings.list',
    kind: 'booking',
    scope: 'calendar:read',
    item: Booking,
    listId: 'BookingList',
    summary: 'Bookings of the team, optionally of one lead',
    querystring: ByLeadQuery,
    filterOf: byLead,
  });

  registerSingle(app, deps, '/v1/calls/:id', 'calls.get', 'call', 'call', 'calls:read', Call, 'One call');
  registerSingle(
    app,
    deps,
    '/v1/conversations/:id',
    'conversations.get',
    'conversation',
    'conversation',
    'messages:read',
    Conversation,
    'One conversation (metadata only)',
  );
  registerSingle(
    app,
    deps,
    '/v1/bookings/:id',
    'bookings.get',
    'booking',
    'booking',
    'calendar:read',
    Booking,
    'One booking',
  );
}

/** A record by id: the team comes from the record; read rate class; not counted toward the quota. */
function registerSingle(
  app: App,
  deps: HttpDeps,
  url: string,
  endpoint: EndpointName,
  kind: RecordKind,
  prefix: IdPrefixed,
  scope: Scope,
  item: TSchema,
  summary: string,
): void {
  const { store, access } = deps;
  app.get(
    url,
    {
      config: { endpoint: { endpoint, auth: true, scope, charge: { rateClass: 'read', quota: false, items: 1 } } },
      schema: { summary, params: PathId(prefix), querystring: NoQuery, response: responses(item), ...secured(false) },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { id } = request.params as { id: string };
      const record = await readableRecord(store, kind, id, principal.teams);
      await access.checkTeam(principal, record.team);
      const json = await answered(request, async () => ({
        json: record.json,
        items: 0,
      }));
      return reply.header('content-type', JSON_TYPE).send(json);
    },
  );
}
