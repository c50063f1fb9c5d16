import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { AccessControl } from '../access/access-control.js';
import type { Clock } from '../clock.js';
import { CursorCodec, loadCursorSecret } from '../cursor-codec.js';
import { ApiError } from '../errors/catalogue.js';
import { DEFAULT_READ_AHEAD_PAGES, FeedReadAhead } from '../feed/feed-read-ahead.js';
import type { Limits } from '../limits.js';
import { instrumentAccess } from '../metrics/instrument-access.js';
import type { Metrics } from '../metrics/metrics.js';
import { RELEASE } from '../service-names.js';
import type { Store } from '../store/store.js';
import type { UsageRecorder } from '../usage/recorder.js';
import { accessHook } from './access-hook.js';
import { chargeHook, settleHook } from './charge.js';
import { closeWhenClosing, connectionOptions } from './connections.js';
import type { App, HttpDeps } from './context.js';
import { ENDPOINTS } from './endpoints.js';
import { firewall } from './firewall.js';
import { lockAwareErrorHandler } from './lock-aware-error-handler.js';
import { NAMED_SCHEMAS, OPENAPI_OPTIONS } from './openapi.js';
import { DEFAULT_PAGE_CACHE_BYTES, PageCache } from './page-cache.js';
import { registerEndpoints } from './pipeline.js';
import { ProblemBodies, sendPlain, sendProblem } from './problem.js';
import { queryAwareValidatorFactory } from './query-validator.js';
import { decorateRequestFields } from './request-fields.js';
import { outcomeOf, requestLogger } from './request-log.js';
import { teamGate } from './team-gate.js';
import type { TrustProxy } from './trust-proxy.js';
import { usageHook } from './usage-hook.js';

export interface BuildAppOptions {
  store: Store;
  access: AccessControl;
  clock: Clock;
  limits: Limits;
  /** A pino logger (a line per request, request-log.ts, and errors), or false for none. */
  logger?: Logger | false;
  /** Counts requests, limiter decisions and page cache use (served by the operator listener). */
  metrics?: Metrics;
  /** Named by `Service-Release` on /v1/health. */
  release?: string;
  /** Bytes of finished list pages kept per process (0 turns the cache off). */
  pageCacheBytes?: number;
  /** Feed pages read ahead and held per process (0 turns read-ahead off). */
  feedReadAheadPages?: number;
  /** Proxies whose `X-Forwarded-For` gives `request.ip`; without it the header is ignored. */
  trustProxy?: TrustProxy;
  /**
   * Where the operator published the error page (`--docs-url`, without a trailing slash): the problem bodies'
   * `type` and `doc_url` are `<docsUrl>/errors#<code>`. Unset, they name the code under ERROR_TYPE_TAG.
   */
  docsUrl?: string;
  /** Records last use, usage counts and the request log of every answered request (docs/request-log.md). */
  usage?: UsageRecorder;
}

/** The API as a Fastify instance, not listening. The cursor secret is loaded on `ready()`. */
export function buildApp(options: BuildAppOptions): FastifyInstance {
  const { store, clock, limits, metrics } = options;
  const access = metrics ? instrumentAccess(options.access, metrics) : options.access;
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    exposeHeadRoutes: false,
    // Fastify's own lines would carry the URL (ids, query strings): request-log.ts writes one line instead.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => `req_${randomUUID()}`,
    // The request id is always ours: an incoming header must not choose it.
    requestIdHeader: false,
    bodyLimit: limits.maxBodyBytes,
    // Ids are checked by their pattern only, so an unknown well-formed id of any length is 404 (the router's
    // default of 100 characters answered 400); Node's header size limit bounds the URL before routing.
    routerOptions: { maxParamLength: Number.MAX_SAFE_INTEGER },
    ...connectionOptions(limits, options.trustProxy),
    // Errors Fastify raises before routing (a URL it cannot decode): the firewall's rules first, then a problem body.
    frameworkErrors: (_error, request, reply) => {
      const outside = (request.method !== 'GET' && request.method !== 'POST') || !request.url.startsWith('/v1/');
      if (outside) return sendPlain(reply, 404, 'firewall_method_or_path');
      return sendProblem(reply, new ApiError('invalid_request'));
    },
    // Fastify's own Ajv, with integer query parameters checked for a plain decimal spelling first.
    schemaController: { compilersFactory: { buildValidator: queryAwareValidatorFactory() } },
    ajv: { customOptions: { removeAdditional: false, coerceTypes: true, allErrors: false, useDefaults: true } },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  // Handlers send stored JSON as strings, which Fastify passes through untouched; the response
  // schemas serve OpenAPI and tests, so building per-route serializers would only cost start-up time.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  const cursors = new CursorCodec();
  // The team checks the pipeline runs for an endpoint bound to a team: refusals, sandbox faults, capture.
  const gate = teamGate(access, store);
  const pages = new PageCache(options.pageCacheBytes ?? DEFAULT_PAGE_CACHE_BYTES);
  const feedReadAhead = new FeedReadAhead(store, clock, options.feedReadAheadPages ?? DEFAULT_READ_AHEAD_PAGES);
  metrics?.watch({ pageCache: pages, feedReadAhead: feedReadAhead.stats });
  const deps: HttpDeps = {
    store,
    clock,
    limits,
    cursors,
    release: options.release ?? RELEASE,
    pages,
    feedReadAhead,
  };

  const problems = new ProblemBodies(options.docsUrl);
  app.decorate('problems', problems);

  decorateRequestFields(app);
  closeWhenClosing(app as unknown as FastifyInstance);
  app.addHook('onReady', async () => {
    cursors.setSecret(await loadCursorSecret(store));
  });
  app.addHook('onRequest', firewall(access, limits));
  app.addHook('preValidation', accessHook(access));
  app.addHook('preHandler', chargeHook(access));
  app.addHook('onSend', settleHook);
  if (options.logger) app.addHook('onResponse', requestLogger(options.logger, options.trustProxy));
  if (options.usage) app.addHook('onResponse', usageHook(options.usage, clock));
  if (metrics) {
    app.addHook('onResponse', (request, reply, done) => {
      metrics.request(request.method, outcomeOf(request, reply), request.refusal);
      done();
    });
  }
  app.setErrorHandler(lockAwareErrorHandler(access));
  app.setNotFoundHandler(async () => {
    throw new ApiError('resource_missing');
  });

  for (const schema of NAMED_SCHEMAS) app.addSchema(schema);
  app.register(swagger, OPENAPI_OPTIONS);
  app.register(async (api) => registerEndpoints(api as unknown as App, deps, gate, ENDPOINTS));
  return app as unknown as FastifyInstance;
}
