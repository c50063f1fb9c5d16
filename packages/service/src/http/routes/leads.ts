import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { ApiError } from '../../errors/catalogue.js';
import { DEFAULT_PAGE_SIZE, LeadsQuery, NoQuery, PageQuery, PathId, SearchBody } from '../../schemas/params.js';
import { Activity, Lead, LeadDetail } from '../../schemas/records.js';
import type { App, HttpDeps } from '../context.js';
import { answered, headerTeam, listBytes, listJson, principalOf } from '../context.js';
import { type CursorScope, decodeListCursor, encodeListCursor } from '../cursor.js';
import { readableRecord, readPage } from '../listing.js';
import { listOf, responses, secured } from '../openapi.js';
import { strictValidatorCompiler } from '../strict-validator.js';
import { registerPagedList, singleFilter } from './paged-list.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const LEAD_FILTERS = ['board', 'stage', 'status'] as const;

/** GET /v1/leads, /v1/leads/{id}, /v1/leads/{id}/activities and POST /v1/leads/search. */
export function registerLeadRoutes(app: App, deps: HttpDeps): void {
  const { store, access, cursors } = deps;

  registerPagedList(app, deps, {
    url: '/v1/leads',
    endpoint: 'leads.list',
    kind: 'lead',
    scope: 'crm:read',
    item: Lead,
    listId: 'LeadList',
    summary: 'Leads and clients of the team; at most one of board, stage, status',
    querystring: LeadsQuery,
    filterOf: (query) => {
      const by = singleFilter(query, LEAD_FILTERS) as (typeof LEAD_FILTERS)[number] | undefined;
      return by ? { by, value: query[by] as string } : undefined;
    },
  });

  app.get(
    '/v1/leads/:id',
    {
      config: {
        endpoint: {
          endpoint: 'leads.get',
          auth: true,
          scope: 'crm:read',
          charge: { rateClass: 'read', quota: false, items: 1 },
        },
      },
      schema: {
        summary: 'One lead with its attribution and response facets',
        params: PathId('lead'),
        querystring: NoQuery,
        response: responses(LeadDetail),
        ...secured(false),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { id } = request.params;
      // One statement reads the lead with both facets spliced in (no parse, no re-serialization); the
      // facets are sent only once the lead is known to be readable.
      const lead = await store.leadDetail(id);
      if (!lead || !principal.teams.includes(lead.team)) throw new ApiError('resource_missing');
      await access.checkTeam(principal, lead.team);
      const body = await answered(request, async () => ({ json: lead.body, items: 0 }));
      return reply.header('content-type', JSON_TYPE).send(body);
    },
  );

  app.get(
    '/v1/leads/:id/activities',
    {
      config: {
        endpoint: {
          endpoint: 'leads.activities',
          auth: true,
          scope: 'crm:read',
          charge: { rateClass: 'sync', quota: true, items: 'limit' },
        },
      },
      schema: {
        summary: 'Activities of one lead, oldest first',
        params: PathId('lead'),
        querystring: PageQuery,
        response: responses(listOf(Activity, 'ActivityList'), true),
        ...secured(false),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { id } = request.params;
      const lead = await readableRecord(store, 'lead', id, principal.teams);
      await access.checkTeam(principal, lead.team);
      const limit = request.query.limit ?? DEFAULT_PAGE_SIZE;
      const scope: CursorScope = { endpoint: 'leads.activities', team: lead.team, filter: `lead=${id}` };
      const after = request.query.cursor ? decodeListCursor(cursors, scope, request.query.cursor).seq : 0;
      const json = await answered(request, async () => {
        const page = await readPage(store, lead.team, 'activity', { by: 'lead', value: id }, after, limit);
        const { last } = page;
        const next = page.hasMore && last ? encodeListCursor(cursors, scope, { seq: last.seq, id: '' }) : null;
        return { json: listBytes(page, next), items: page.count };
      });
      return reply.header('content-type', JSON_TYPE).send(json);
    },
  );

  app.post(
    '/v1/leads/search',
    {
      config: {
        endpoint: {
          endpoint: 'leads.search',
          auth: true,
          scope: 'crm:read',
          charge: { rateClass: 'sync', quota: false, items: 'limit' },
          checkParams: (request) => {
            const body = request.body as { email?: string; phone?: string };
            if (body.email === undefined && body.phone === undefined) throw new ApiError('invalid_request', 'email');
          },
        },
      },
      validatorCompiler: strictValidatorCompiler,
      schema: {
        summary: 'Leads matching an email (case-insensitive) or an E.164 phone; either matches',
        querystring: NoQuery,
        body: SearchBody,
        response: responses(listOf(Lead, 'LeadSearchList'), true),
        ...secured(true),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const body = request.body;
      const team = headerTeam(request, principal);
      await access.checkTeam(principal, team);
      const email = body.email?.trim().toLowerCase() || undefined;
      const phone = body.phone === undefined ? undefined : normalisePhone(body.phone);
      const limit = body.limit ?? DEFAULT_PAGE_SIZE;
      const scope: CursorScope = {
        endpoint: 'leads.search',
        team,
        filter: `email=${email ?? ''}\u0000phone=${phone ?? ''}`,
      };
      const after = body.cursor ? decodeListCursor(cursors, scope, body.cursor).seq : 0;
      const json = await answered(request, async () => {
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
      });
      return reply.header('content-type', JSON_TYPE).send(json);
    },
  );
}

/** E.164 when the number validates without a default country (as stored leads are), else undefined. */
function normalisePhone(raw: string): string | undefined {
  const parsed = parsePhoneNumberFromString(raw.trim());
  return parsed?.isValid() ? parsed.number : undefined;
}
