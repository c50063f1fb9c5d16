import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ERROR_CATALOGUE, type ErrorCode } from '../errors/catalogue.js';
import { API_REALM, ERROR_TYPE_TAG } from '../service-names.js';
import { StoreUnavailableError } from '../store/unavailable.js';
import type { Refusal } from './request-log.js';

// Every error the API itself answers becomes one RFC 9457 problem body, built here and nowhere else.

const PROBLEM_TYPE = 'application/problem+json';
const WWW_AUTHENTICATE = `Bearer realm="${API_REALM}"`;

/**
 * A problem's `type` and `doc_url` for `code`: its entry on the error page the operator published at
 * `docsUrl`, or without one its name under ERROR_TYPE_TAG, never an address of this process.
 */
export function errorDocUrl(docsUrl: string | undefined, code: ErrorCode): string {
  return docsUrl === undefined ? `${ERROR_TYPE_TAG}#${code}` : `${docsUrl}/errors#${code}`;
}

/**
 * The problem bodies of one app: `"type":...,"title":...,"status":...,"code":...` fragments precomputed per
 * code from the app's docs URL (the error path is hot).
 */
export class ProblemBodies {
  private readonly heads: Record<ErrorCode, { head: string; tail: string }>;

  constructor(docsUrl: string | undefined) {
    this.heads = Object.fromEntries(
      Object.entries(ERROR_CATALOGUE).map(([code, entry]) => {
        const url = JSON.stringify(errorDocUrl(docsUrl, code as ErrorCode));
        const head = `{"type":${url},"title":${JSON.stringify(entry.title)},"status":${entry.status},"code":"${code}"`;
        return [code, { head, tail: `,"doc_url":${url}}` }];
      }),
    ) as Record<ErrorCode, { head: string; tail: string }>;
  }

  /** The problem body of `error` for the request `requestId`. */
  body(error: ApiError, requestId: string): string {
    const { head, tail } = this.heads[error.code];
    const param = error.param === undefined ? '' : `,"param":${JSON.stringify(error.param)}`;
    const extra = error.members === undefined ? '' : JSON.stringify(error.members).slice(1, -1);
    const members = extra === '' ? '' : `,${extra}`;
    return `${head},"request_id":"${requestId}"${param}${members}${tail}`;
  }
}

/** Writes `error` as problem+json with the headers its status requires. */
export function sendProblem(reply: FastifyReply, error: ApiError): FastifyReply {
  reply.request.errorCode = error.code;
  reply.code(error.status).header('content-type', PROBLEM_TYPE).header('service-request-id', reply.request.id);
  if (error.status === 401) reply.header('www-authenticate', WWW_AUTHENTICATE);
  // Every 429 carries Retry-After; a 503 carries it when the fault says how long it lasts (a database that
  // is unavailable for now), not for the operator's switch, whose end nobody knows.
  if (error.status === 429 || (error.status === 503 && error.retryAfter !== undefined)) {
    reply.header('retry-after', String(Math.max(1, Math.ceil(error.retryAfter ?? 1))));
  }
  return reply.send(reply.server.problems.body(error, reply.request.id));
}

/** Answers like the firewall in front of the API: a bare status, no body, no request id; logged as `refusal`. */
export function sendPlain(reply: FastifyReply, status: 403 | 404 | 429, refusal: Refusal): FastifyReply {
  reply.request.refusal = refusal;
  reply.removeHeader('service-request-id');
  return reply.code(status).send();
}

/** The parameter a validation failure names, spelled as the client sent it. */
function validationParam(error: FastifyError): string | undefined {
  const first = error.validation?.[0];
  if (!first) return undefined;
  const params = first.params as Record<string, unknown>;
  let name: string | undefined;
  if (typeof params.additionalProperty === 'string') name = params.additionalProperty;
  else if (typeof params.missingProperty === 'string') name = params.missingProperty;
  else name = first.instancePath.split('/')[1];
  if (error.validationContext === 'headers') return name === 'service-team' ? 'Service-Team' : name;
  return name === '' ? undefined : name;
}

/** Maps anything thrown below the routes to the problem the API answers with. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) return new ApiError('invalid_request', { param: validationParam(fastifyError) });
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new ApiError('invalid_request');
  }
  // Only the store decides that a database fault passes (store/unavailable.ts): a socket error raised
  // anywhere else, such as a client going away mid-body, is not the database's.
  if (error instanceof StoreUnavailableError) {
    return new ApiError('service_unavailable', { retryAfter: error.retryAfterSeconds });
  }
  return new ApiError('internal_error');
}

/** Node's error for a request whose client closed the connection before its body arrived. */
function isClientAbort(error: FastifyError, request: FastifyRequest): boolean {
  return error.code === 'ECONNRESET' && error.message === 'aborted' && request.raw.readableAborted;
}

/**
 * What a log line keeps of an error: its type, first message line, driver code, reason and stack. Not the
 * error itself: pino would serialize every property and the cause, and a PostgreSQL error's `detail`,
 * `where` or `parameters` can hold row values (an email in a unique violation).
 */
export function loggableError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { type: typeof error, message: String(error).split('\n')[0] };
  const { code, reason } = error as { code?: unknown; reason?: unknown };
  return {
    type: error.name,
    message: error.message.split('\n')[0],
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof reason === 'string' ? { reason } : {}),
    ...(error.stack ? { stack: error.stack } : {}),
  };
}

/** The one error handler: plain 403 for an oversized streamed body, problem+json for everything else. */
export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendPlain(reply, 403, 'firewall_body_too_large');
  // Nobody is left to read the answer and nothing failed here: no log line.
  if (isClientAbort(error, request)) return sendProblem(reply, new ApiError('invalid_request'));
  return sendLoggedProblem(error, request, reply);
}

/** The problem body for any error, logging an unexpected one (both apps' error handlers end here). */
export function sendLoggedProblem(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const apiError = toApiError(error);
  // Only the error itself: never headers, keys or bodies. A passing database fault is a warning (a
  // failover brings one per request until the pool reconnects); anything else unexpected is an error.
  if (apiError.code === 'internal_error') {
    request.log.error({ err: loggableError(error), request_id: request.id }, 'request failed');
  }
  if (error instanceof StoreUnavailableError) {
    // err carries the reason, the driver's code and the driver's message (never a query or its values).
    request.log.warn({ err: loggableError(error), request_id: request.id }, 'database unavailable');
  }
  return sendProblem(reply, apiError);
}
