import { SCOPES } from '../../schemas/enums.js';
import { NoQuery } from '../../schemas/params.js';
import { Health, Integration } from '../../schemas/records.js';
import { StoreUnavailableError } from '../../store/unavailable.js';
import type { App, HttpDeps } from '../context.js';
import { answered, principalOf } from '../context.js';
import { responses, secured } from '../openapi.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const HEALTH_JSON = '{"object":"health","status":"ok"}';

/** GET /v1/me and GET /v1/health. */
export function registerMetaRoutes(app: App, deps: HttpDeps): void {
  app.get(
    '/v1/me',
    {
      config: {
        endpoint: { endpoint: 'me', auth: true, scope: null, charge: { rateClass: 'read', quota: false, items: 1 } },
      },
      schema: {
        summary: 'The integration of the key',
        querystring: NoQuery,
        response: responses(Integration),
        ...secured(false),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const json = await answered(request, async () => ({
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
      }));
      return reply.header('content-type', JSON_TYPE).send(json);
    },
  );

  app.get(
    '/v1/health',
    {
      config: { endpoint: { endpoint: 'health', auth: false, scope: null } },
      schema: { summary: 'Availability (no key)', querystring: NoQuery, response: responses(Health), security: [] },
    },
    async (_request, reply) => {
      try {
        await deps.store.ping();
      } catch (error) {
        // Health asks one thing, whether the database answers: any failure of the ping is a 503.
        throw error instanceof StoreUnavailableError
          ? error
          : new StoreUnavailableError('not_ready', undefined, { cause: error });
      }
      return reply.header('content-type', JSON_TYPE).header('service-release', deps.release).send(HEALTH_JSON);
    },
  );
}
