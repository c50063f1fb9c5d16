import type { CursorScope } from '../../cursor-codec.js';
import { ApiError } from '../../errors/catalogue.js';
import { listBytes, listJson } from '../../list-envelope.js';
import { DEFAULT_PAGE_SIZE, LeadsQuery, NoQuery, PageQuery, PathId, SearchBody } from '../../schemas/params.js';
import { Activity, Lead, LeadDetail } from '../../schemas/records.js';
import { parsePhoneNumberFromString } from '../../write/events/phone.js';
import { decodeListCursor, encodeListCursor } from '../cursor.js';
import { type Endpoint, endpoint } from '../endpoint.js';
import { readPage, recordById } from '../listing.js';
import { listOf } from '../openapi.js';
import { pagedList, singleFilter } from './paged-list.js';

const LEAD_FILTERS = ['board', 'stage', 'status'] as const;

/** GET /v1/leads, /v1/leads/{id}, /v1/leads/{id}/activities and POST /v1/leads/search. */
export const LEAD_ENDPOINTS: readonly Endpoint[] = [
  endpoint({
    method: 'GET',
    url: '/v1/leads',
    name: 'leads.list',
    summary: 'Leads and clients of the team; at most one of board, stage, status',
    caller: 'crm:read',
    charge: { rateClass: 'sync', quota: true, items: 'limit' },
    team: { from: 'header', whileUncaptured: 'capture_not_ready' },
    querystring: LeadsQuery,
    response: listOf(Lead, 'LeadList'),
    ...pagedList({
      kind: 'lead',
      filterOf: (query) => {
        const by = singleFilter(query, LEAD_FILTERS) as (typeof LEAD_FILTERS)[number] | undefined;
        return by ? { by, value: query[by] as string } : undefined;
      },
    }),
  }),
  endpoint({
    method: 'GET',
    url: '/v1/leads/:id',
    name: 'leads.get',
    summary: 'One lead with its attribution and response facets',
    caller: 'crm:read',
    charge: { rateClass: 'read', quota: false, items: 1 },
    team: {
      from: 'record',
      // One statement reads the lead with both facets spliced in (no parse, no re-serialization); the
      // facets are sent only once the lead is known to be readable.
      read: async ({ store }, id, principal) => {
        const lead = await store.leadDetail(id);
        if (!lead || !principal.teams.includes(lead.team)) throw new ApiError('resource_missing');
        return lead;
      },
      whileUncaptured: 'resource_missing',
    },
    params: PathId('lead'),
    querystring: NoQuery,
    response: LeadDetail,
    handle: async ({ record }) => ({ json: record.body, items: 0 }),
  }),
  endpoint({
    method: 'GET',
    url: '/v1/leads/:id/activities',
    name: 'leads.activities',
    summary: 'Activities of one lead, oldest first',
    caller: 'crm:read',
    charge: { rateClass: 'sync', quota: true, items: 'limit' },
    // The lead's activities are read like the lead: 404 while its team is not prepared.
    team: { from: 'record', read: recordById('lead'), whileUncaptured: 'resource_missing' },
    params: PathId('lead'),
    querystring: PageQuery,
    response: listOf(Activity, 'ActivityList'),
    handle: async ({ deps, team, params, query }) => {
      const { store, cursors } = deps;
      const { id } = params;
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const scope: CursorScope = { endpoint: 'leads.activities', team, filter: `lead=${id}` };
      const after = query.cursor ? decodeListCursor(cursors, scope, query.cursor).seq : 0;
      const page = await readPage(store, team, 'activity', { by: 'lead', value: id }, after, limit);
      const { last } = page;
      const next = page.hasMore && last ? encodeListCursor(cursors, scope, { seq: last.seq, id: '' }) : null;
      return { json: listBytes(page, next), items: page.count };
    },
  }),
  endpoint({
    method: 'POST',
    url: '/v1/leads/search',
    name: 'leads.search',
    summary: 'Leads matching an email (case-insensitive) or an E.164 phone; either matches',
    caller: 'crm:read',
    charge: { rateClass: 'sync', quota: false, items: 'limit' },
    team: { from: 'header', whileUncaptured: 'capture_not_ready' },
    querystring: NoQuery,
    body: SearchBody,
    response: listOf(Lead, 'LeadSearchList'),
    checkParams: ({ body }) => {
      if (body.email === undefined && body.phone === undefined)
        throw new ApiError('invalid_request', { param: 'email' });
    },
    handle: async ({ deps, team, body }) => {
      const { store, cursors } = deps;
      const email = body.email?.trim().toLowerCase() || undefined;
      const phone = body.phone === undefined ? undefined : normalisePhone(body.phone);
      const limit = body.limit ?? DEFAULT_PAGE_SIZE;
      const scope: CursorScope = {
        endpoint: 'leads.search',
        team,
        filter: `email=${email ?? ''}\u0000phone=${phone ?? ''}`,
      };
      const after = body.cursor ? decodeListCursor(cursors, scope, body.cursor).seq : 0;
      // A phone that does not validate matches nothing; with an email too, the email still matches.
      if (email === undefined && phone === undefined) return { json: listJson([], false, null), items: 0 };
      const rows = await store.searchLeads({
        team,
        ...(email === undefined ? {} : { email }),
        ...(phone === undefined ? {} : { phone }),
        after,
        limit: limit + 1,
      });
      const hasMore = rows.length > limit;
      if (hasMore) rows.length = limit;
      const last = rows[rows.length - 1];
      const next = hasMore && last ? encodeListCursor(cursors, scope, { seq: last.seq, id: '' }) : null;
      return {
        json: listJson(
          rows.map((r) => r.json),
          hasMore,
          next,
        ),
        items: rows.length,
      };
    },
  }),
];

/** E.164 when the number validates without a default country (as stored leads are), else undefined. */
function normalisePhone(raw: string): string | undefined {
  const parsed = parsePhoneNumberFromString(raw.trim());
  return parsed?.isValid() ? parsed.number : undefined;
}
