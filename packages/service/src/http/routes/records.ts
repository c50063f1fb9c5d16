import { ApiError } from '../../errors/catalogue.js';
import { ByLeadQuery, NoQuery, PageQuery, PathId } from '../../schemas/params.js';
import { Board, Booking, Call, Conversation } from '../../schemas/records.js';
import { type Endpoint, endpoint } from '../endpoint.js';
import { recordById, storedRecord } from '../listing.js';
import { listOf } from '../openapi.js';
import { pagedList } from './paged-list.js';

const byLead = (query: Record<string, unknown>) =>
  typeof query.lead === 'string' ? { by: 'lead' as const, value: query.lead } : undefined;

/** GET /v1/boards, /v1/calls, /v1/conversations, /v1/bookings and their single-record variants. */
export const RECORD_ENDPOINTS: readonly Endpoint[] = [
  endpoint({
    method: 'GET',
    url: '/v1/boards',
    name: 'boards.list',
    summary: 'Boards of the team with their stages in pipeline order',
    caller: 'crm:read',
    charge: { rateClass: 'sync', quota: true, items: 'limit' },
    team: { from: 'header', whileUncaptured: 'capture_not_ready' },
    querystring: PageQuery,
    response: listOf(Board, 'BoardList'),
    ...pagedList({ kind: 'board', filterOf: () => undefined }),
  }),
  endpoint({
    method: 'GET',
    url: '/v1/calls',
    name: 'calls.list',
    summary: 'Calls of the team, optionally of one lead',
    caller: 'calls:read',
    charge: { rateClass: 'sync', quota: true, items: 'limit' },
    team: { from: 'header', whileUncaptured: 'capture_not_ready' },
    querystring: ByLeadQuery,
    response: listOf(Call, 'CallList'),
    ...pagedList({ kind: 'call', filterOf: byLead }),
  }),
  endpoint({
    method: 'GET',
    url: '/v1/conversations',
    name: 'conversations.list',
    summary: 'Conversations of the team (metadata only), optionally of one lead',
    caller: 'messages:read',
    charge: { rateClass: 'sync', quota: true, items: 'limit' },
    team: { from: 'header', whileUncaptured: 'capture_not_ready' },
    querystring: ByLeadQuery,
    response: listOf(Conversation, 'ConversationList'),
    ...pagedList({
      kind: 'conversation',
      filterOf: byLead,
      // Spec, Paging rules: a conversations cursor is refused once its conversation was erased.
      checkCursor: async ({ store }, id) => {
        const record = await store.getRecord('conversation', id);
        if (record?.removed === 'erased') throw new ApiError('invalid_request', { param: 'cursor' });
      },
    }),
  }),
  endpoint({
    method: 'GET',
    url: '/v1/bookings',
    name: 'bookings.list',
    summary: 'Bookings of the team, optionally of one lead',
    caller: 'calendar:read',
    charge: { rateClass: 'sync', quota: true, items: 'limit' },
    team: { from: 'header', whileUncaptured: 'capture_not_ready' },
    querystring: ByLeadQuery,
    response: listOf(Booking, 'BookingList'),
    ...pagedList({ kind: 'booking', filterOf: byLead }),
  }),
  endpoint({
    method: 'GET',
    url: '/v1/calls/:id',
    name: 'calls.get',
    summary: 'One call',
    caller: 'calls:read',
    charge: { rateClass: 'read', quota: false, items: 1 },
    team: { from: 'record', read: recordById('call'), whileUncaptured: 'resource_missing' },
    params: PathId('call'),
    querystring: NoQuery,
    response: Call,
    handle: storedRecord,
  }),
  endpoint({
    method: 'GET',
    url: '/v1/conversations/:id',
    name: 'conversations.get',
    summary: 'One conversation (metadata only)',
    caller: 'messages:read',
    charge: { rateClass: 'read', quota: false, items: 1 },
    team: { from: 'record', read: recordById('conversation'), whileUncaptured: 'resource_missing' },
    params: PathId('conversation'),
    querystring: NoQuery,
    response: Conversation,
    handle: storedRecord,
  }),
  endpoint({
    method: 'GET',
    url: '/v1/bookings/:id',
    name: 'bookings.get',
    summary: 'One booking',
    caller: 'calendar:read',
    charge: { rateClass: 'read', quota: false, items: 1 },
    team: { from: 'record', read: recordById('booking'), whileUncaptured: 'resource_missing' },
    params: PathId('booking'),
    querystring: NoQuery,
    response: Booking,
    handle: storedRecord,
  }),
];
