import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { AccessControl } from '../access/access-control.js';
import type { Clock } from '../clock.js';
import { type Limits, RELEASE } from '../config.js';
import { ApiError } from '../errors/catalogue.js';
import { captureGate } from '../feed/capture-gate.js';
import type { Store } from '../store/store.js';
import type { App, HttpDeps } from './context.js';
import { CursorCodec, loadCursorSecret } from './cursor.js';
import { accessHook, firewall } from './firewall.js';
import { NAMED_SCHEMAS, OPENAPI_OPTIONS } from './openapi.js';
import { DEFAULT_PAGE_CACHE_BYTES, PageCache } from './page-cache.js';
import { handleError, sendPlain, sendProblem } from './problem.js';
import { registerFeedRoutes } from './routes/feed.js';
import { registerLeadRoutes } from './routes/leads.js';
import { registerMetaRoutes } from './routes/meta.js';
import { registerRecordRoutes } from './routes/records.js';
import { registerTeamRoutes } from './routes/teams.js';

export interface BuildAppOptions {
  store: Store;
  access: AccessControl;
  clock: Clock;
  limits: Limits;
  /** A pino logger (errors only on the request path), or false for none. */
  logger?: Logger | false;
  /** Named by `Service-Release` on /v1/health. */
  release?: string;
  /** Bytes of finished list pages kept per process (0 turns the cache off). */
  pageCacheBytes?: number;
}

/** The API as a Fastify instance, not listening. The cursor secret is loaded on `ready()`. */
export function buildApp(options: BuildAppOptions): FastifyInstance {
  const { store, access, clock, limits } = options;
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    exposeHeadRoutes: false,
    // Errors only: a log line per request costs throughput and could carry personal data.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => `req_${randomUUID()}`,
    // The request id is always ours: an incoming header must not choose it.
    requestIdHeader: false,
    bodyLimit: limits.maxBodyBytes,
    // Errors Fastify raises before routing (a URL it cannot decode): the firewall's rules first, then a problem body.
    frameworkErrors: (_error, request, reply) => {
      const outside = (request.method !== 'GET' && request.method !== 'POST') || !request.url.startsWith('/v1/');
      if (outside) return sendPlain(reply, 404);
      return sendProblem(reply, new ApiError('invalid_request'));
    },
    ajv: { customOptions: { removeAdditional: false, coerceTypes: true, allErrors: false, useDefaults: true } },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  // Handlers send stored JSON as strings, which Fastify passes through untouched; the response
  // schemas serve OpenAPI and tests, so building per-route serializers would only cost start-up time.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  const cursors = new CursorCodec();
  // Routes get an access control whose checkTeam also checks capture (409 capture_not_ready, or 404
  // for a single record); the hook tells it which kind of route runs.
  const gate = captureGate(access, store);
  const pages = new PageCache(options.pageCacheBytes ?? DEFAULT_PAGE_CACHE_BYTES);
  const deps: HttpDeps = {
    store,
    access: gate.access,
    clock,
    limits,
    cursors,
    release: options.release ?? RELEASE,
    pages,
  };

  app.decorateRequest('principal', null);
  app.addHook('onReady', async () => {
    cursors.setSecret(await loadCursorSecret(store));
  });
  app.addHook('onRequest', gate.hook);
  app.addHook('onRequest', firewall(access, limits));
  app.addHook('preValidation', accessHook(access));
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(async () => {
    throw new ApiError('resource_missing');
  });

  for (const schema of NAMED_SCHEMAS) app.addSchema(schema);
  app.register(swagger, OPENAPI_OPTIONS);
  app.register(async (api) => {
    registerMetaRoutes(api as unknown as App, deps);
    registerTeamRoutes(api as unknown as App, deps);
    registerLeadRoutes(api as unknown as App, deps);
    registerRecordRoutes(api as unknown as App, deps);
    registerFeedRoutes(api as unknown as App, deps);
  });
  return app as unknown as FastifyInstance;
}
