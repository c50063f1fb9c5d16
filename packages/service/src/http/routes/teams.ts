import { listJson } from '../../list-envelope.js';
import { NoQuery, PathId } from '../../schemas/params.js';
import { BookingService, Member, Team } from '../../schemas/records.js';
import { type Endpoint, endpoint } from '../endpoint.js';
import { NEVER_PAGED_RESERVATION, readAll, recordById, storedRecord } from '../listing.js';
import { listOf } from '../openapi.js';

/** GET /v1/teams, /v1/teams/{id}, /v1/members, /v1/booking_services. */
export const TEAM_ENDPOINTS: readonly Endpoint[] = [
  endpoint({
    method: 'GET',
    url: '/v1/teams',
    name: 'teams.list',
    summary: 'Every team the key reads (never paged)',
    caller: 'teams:read',
    charge: { rateClass: 'sync', quota: true, items: NEVER_PAGED_RESERVATION },
    team: { from: 'none' },
    querystring: NoQuery,
    response: listOf(Team, 'TeamList'),
    handle: async ({ deps, principal }) => {
      const records = await deps.store.getRecords('team', principal.teams);
      const byId = new Map(records.map((r) => [r.id, r.json]));
      const items: string[] = [];
      for (const id of principal.teams) {
        const team = byId.get(id);
        if (team) items.push(team);
      }
      return { json: listJson(items, false, null), items: items.length };
    },
  }),
  endpoint({
    method: 'GET',
    url: '/v1/teams/:id',
    name: 'teams.get',
    summary: 'One team the key reads',
    caller: 'teams:read',
    charge: { rateClass: 'read', quota: false, items: 1 },
    team: { from: 'record', read: recordById('team'), whileUncaptured: 'resource_missing' },
    params: PathId('team'),
    querystring: NoQuery,
    response: Team,
    handle: storedRecord,
  }),
  endpoint({
    method: 'GET',
    url: '/v1/members',
    name: 'members.list',
    summary: 'Members of the team (never paged)',
    caller: 'teams:read',
    charge: { rateClass: 'sync', quota: true, items: NEVER_PAGED_RESERVATION },
    team: { from: 'header', whileUncaptured: 'capture_not_ready' },
    querystring: NoQuery,
    response: listOf(Member, 'MemberList'),
    handle: async ({ deps, team }) => {
      const items = await readAll(deps.store, team, 'member');
      return { json: listJson(items, false, null), items: items.length };
    },
  }),
  endpoint({
    method: 'GET',
    url: '/v1/booking_services',
    name: 'booking_services.list',
    summary: 'Bookable services of the team (never paged)',
    caller: 'calendar:read',
    charge: { rateClass: 'sync', quota: true, items: NEVER_PAGED_RESERVATION },
    team: { from: 'header', whileUncaptured: 'capture_not_ready' },
    querystring: NoQuery,
    response: listOf(BookingService, 'BookingServiceList'),
    handle: async ({ deps, team }) => {
      const items = await readAll(deps.store, team, 'booking_service');
      return { json: listJson(items, false, null), items: items.length };
    },
  }),
];
