import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import type { OperatorTokenAuth } from '../access/operator-tokens.js';
import type { StoreAccessControl } from '../access/store-access-control.js';
import type { Clock } from '../clock.js';
import { ApiError } from '../errors/catalogue.js';
import { closeWhenClosing, connectionOptions } from '../http/connections.js';
import type { App } from '../http/context.js';
import type { InternalContext, InternalSurface } from '../http/internal-surface.js';
import { ProblemBodies, sendLoggedProblem, sendProblem } from '../http/problem.js';
import { decorateRequestFields } from '../http/request-fields.js';
import { routeOf } from '../http/request-log.js';
import type { TrustProxy } from '../http/trust-proxy.js';
import type { Limits } from '../limits.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Store } from '../store/store.js';
import type { UsageRecorder } from '../usage/recorder.js';
import { operatorAuthHook } from './operator-auth.js';

// The internal listener's app (docs/internal-listener.md): a Fastify app of its own, never the public API's
// port or pipeline, serving the surfaces under /intake/v1, /manage/v1 and /console. Errors are problem+json
// from the same catalogue and problem bodies as the API. Each route names the token scope it needs; the auth
// hook checks the token before any body is read.

export interface InternalAppOptions {
  store: Store;
  clock: Clock;
  limits: Limits;
  tokens: OperatorTokenAuth;
  surfaces: readonly InternalSurface[];
  /** A pino logger (a line per request and errors), or none. */
  logger?: Logger | undefined;
  metrics?: Metrics | undefined;
  trustProxy?: TrustProxy | undefined;
  docsUrl?: string | undefined;
  /** Given to the surfaces (InternalContext): the API's access control and usage recorder. */
  access?: StoreAccessControl | undefined;
  usage?: UsageRecorder | undefined;
}

/** The internal app, not listening. */
export function buildInternalApp(options: InternalAppOptions): FastifyInstance {
  const { limits, tokens } = options;
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    exposeHeadRoutes: false,
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => `req_${randomUUID()}`,
    requestIdHeader: false,
    // The largest body any surface takes; a route may set a smaller one.
    bodyLimit: limits.intakeMaxBodyBytes,
    ...connectionOptions(limits, options.trustProxy),
    frameworkErrors: (_error, _request, reply) => sendProblem(reply, new ApiError('invalid_request')),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false, useDefaults: true } },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  app.decorate('problems', new ProblemBodies(options.docsUrl));
  decorateRequestFields(app);
  closeWhenClosing(app as unknown as FastifyInstance);
  // Every route says which scope it needs: a surface cannot forget authentication.
  app.addHook('onRoute', (route) => {
    if (route.config?.operatorScope === undefined) {
      throw new Error(`internal route ${route.method} ${route.url} declares no config.operatorScope`);
    }
  });
  app.addHook('onRequest', operatorAuthHook(tokens));
  const { logger, metrics } = options;
  if (logger) app.addHook('onResponse', internalRequestLogger(logger));
  if (metrics) {
    app.addHook('onResponse', (request, reply, done) => {
      metrics.internalRequest(routeOf(request), reply.statusCode, request.errorCode);
      done();
    });
  }
  app.setErrorHandler(internalErrorHandler);
  app.setNotFoundHandler(async () => {
    throw new ApiError('resource_missing');
  });

  const context: InternalContext = {
    store: options.store,
    clock: options.clock,
    limits,
    logger,
    metrics,
    tokens,
    docsUrl: options.docsUrl,
    access: options.access,
    usage: options.usage,
  };
  for (const surface of options.surfaces) {
    app.register(async (scoped) => surface.register(scoped as unknown as App, context), { prefix: surface.prefix });
  }
  return app as unknown as FastifyInstance;
}

/** `/events/3/lead` as the client wrote it: `events[3].lead`. */
export function bodyPath(instancePath: string, property?: string): string | undefined {
  const parts = instancePath.split('/').slice(1);
  if (property !== undefined) parts.push(property);
  let path = '';
  for (const part of parts) {
    const name = part.replace(/~1/g, '/').replace(/~0/g, '~');
    path += /^\d+$/.test(name) ? `[${name}]` : path === '' ? name : `.${name}`;
  }
  return path === '' ? undefined : path;
}

/** The body field a validation failure names, never its value. */
function validationParam(error: FastifyError): string | undefined {
  const first = error.validation?.[0];
  if (!first) return undefined;
  const params = first.params as Record<string, unknown>;
  const property =
    typeof params.missingProperty === 'string'
      ? params.missingProperty
      : typeof params.additionalProperty === 'string'
        ? params.additionalProperty
        : undefined;
  return bodyPath(first.instancePath, property);
}

/** Problem+json for everything: a body over the limit is `413 body_too_large`, never the API's plain 403. */
function internalErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendProblem(reply, new ApiError('body_too_large'));
  if (error.validation) {
    const param = validationParam(error);
    return sendProblem(reply, new ApiError('invalid_request', param === undefined ? {} : { param }));
  }
  return sendLoggedProblem(error, request, reply);
}

/** One line per request: ids, route template, status, code, the token's name; never a body or a header. */
function internalRequestLogger(logger: Logger) {
  return (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const line = {
      request_id: request.id,
      listener: 'internal',
      method: request.method,
      route: routeOf(request),
      status: reply.statusCode,
      code: request.errorCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      token: request.operator?.name ?? null,
    };
    if (reply.statusCode === 401 || reply.statusCode === 403 || reply.statusCode === 429) {
      logger.warn({ ...line, client: request.ip }, 'request refused');
    } else {
      logger.info(line, 'request');
    }
    done();
  };
}
