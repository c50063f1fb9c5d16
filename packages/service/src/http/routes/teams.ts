import type { EndpointName } from '../../access/endpoints.js';
import type { RecordKind, Scope } from '../../schemas/enums.js';
import { NoQuery, PathId } from '../../schemas/params.js';
import { BookingService, Member, Team } from '../../schemas/records.js';
import type { App, HttpDeps } from '../context.js';
import { answered, headerTeam, listJson, principalOf } from '../context.js';
import { NEVER_PAGED_RESERVATION, readAll, readableRecord } from '../listing.js';
import { listOf, responses, secured } from '../openapi.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** GET /v1/teams, /v1/teams/{id}, /v1/members, /v1/booking_services. */
export function registerTeamRoutes(app: App, deps: HttpDeps): void {
  const { store, access } = deps;

  app.get(
    '/v1/teams',
    {
      config: {
        endpoint: {
          endpoint: 'teams.list',
          auth: true,
          scope: 'teams:read',
          charge: { rateClass: 'sync', quota: true, items: NEVER_PAGED_RESERVATION },
        },
      },
      schema: {
        summary: 'Every team the key reads (never paged)',
        querystring: NoQuery,
        response: responses(listOf(Team, 'TeamList'), true),
        ...secured(false),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const json = await answered(request, async () => {
        const records = await store.getRecords('team', principal.teams);
        const byId = new Map(records.map((r) => [r.id, r.json]));
        const items: string[] = [];
        for (const id of principal.teams) {
          const team = byId.get(id);
          if (team) items.push(team);
        }
        return { json: listJson(items, false, null), items: items.length };
      });
      return reply.header('content-type', JSON_TYPE).send(json);
    },
  );

  app.get(
    '/v1/teams/:id',
    {
      config: {
        endpoint: {
          endpoint: 'teams.get',
          auth: true,
          scope: 'teams:read',
          charge: { rateClass: 'read', quota: false, items: 1 },
        },
      },
      schema: {
        summary: 'One team the key reads',
        params: PathId('team'),
        querystring: NoQuery,
        response: responses(Team),
        ...secured(false),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const record = await readableRecord(store, 'team', request.params.id, principal.teams);
      await access.checkTeam(principal, record.team);
      const json = await answered(request, async () => ({
        json: record.json,
        items: 0,
      }));
      return reply.header('content-type', JSON_TYPE).send(json);
    },
  );

  const wholeTeamList = (
    url: string,
    endpoint: EndpointName,
    kind: RecordKind,
    scope: Scope,
    item: typeof Member | typeof BookingService,
    listId: string,
    summary: string,
  ) =>
    app.get(
      url,
      {
        config: {
          endpoint: {
            endpoint,
            auth: true,
            scope,
            charge: { rateClass: 'sync', quota: true, items: NEVER_PAGED_RESERVATION },
          },
        },
        schema: { summary, querystring: NoQuery, response: responses(listOf(item, listId), true), ...secured(true) },
      },
      async (request, reply) => {
        const principal = principalOf(request);
        const team = headerTeam(request, principal);
        await access.checkTeam(principal, team);
        const json = await answered(request, async () => {
          const items = await readAll(store, team, kind);
          return { json: listJson(items, false, null), items: items.length };
        });
        return reply.header('content-type', JSON_TYPE).send(json);
      },
    );

  wholeTeamList(
    '/v1/members',
    'members.list',
    'member',
    'teams:read',
    Member,
    'MemberList',
    'Members of the team (never paged)',
  );
  wholeTeamList(
    '/v1/booking_services',
    'booking_services.list',
    'booking_service',
    'calendar:read',
    BookingService,
    'BookingServiceList',
    'Bookable services of the team (never paged)',
  );
}
