import { SCOPES } from '../../schemas/enums.js';
import { NoQuery } from '../../schemas/params.js';
import { Health, Integration } from '../../schemas/records.js';
import { StoreUnavailableError } from '../../store/unavailable.js';
import { type Endpoint, endpoint } from '../endpoint.js';

const HEALTH_JSON = '{"object":"health","status":"ok"}';

/** GET /v1/me and GET /v1/health. */
export const META_ENDPOINTS: readonly Endpoint[] = [
  endpoint({
    method: 'GET',
    url: '/v1/me',
    name: 'me',
    summary: 'The integration of the key',
    caller: 'any_key',
    charge: { rateClass: 'read', quota: false, items: 1 },
    team: { from: 'none' },
    querystring: NoQuery,
    response: Integration,
    handle: async ({ principal }) => ({
      items: 0,
      // A handful of fields from the principal, not a stored record: stringify is cheap here.
      json: JSON.stringify({
        object: 'integration',
        id: principal.integrationId,
        livemode: principal.livemode,
        name: principal.name,
        key: { last4: principal.last4 },
        teams: principal.teams,
        scopes: SCOPES.filter((s) => principal.scopes.includes(s)),
      }),
    }),
  }),
  endpoint({
    method: 'GET',
    url: '/v1/health',
    name: 'health',
    summary: 'Availability (no key)',
    caller: 'no_key',
    charge: null,
    team: { from: 'none' },
    querystring: NoQuery,
    response: Health,
    handle: async ({ deps }) => {
      try {
        await deps.store.ping();
      } catch (error) {
        // Health asks one thing, whether the database answers: any failure of the ping is a 503.
        throw error instanceof StoreUnavailableError
          ? error
          : new StoreUnavailableError('not_ready', undefined, { cause: error });
      }
      return { json: HEALTH_JSON, items: 0, headers: { 'service-release': deps.release } };
    },
  }),
];
