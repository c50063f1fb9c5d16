import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { API_REALM, DOCS_URL } from '../config.js';
import { ApiError, ERROR_CATALOGUE, type ErrorCode } from '../errors/catalogue.js';

// Every error the API itself answers becomes one RFC 9457 problem body, built here and nowhere else.

const PROBLEM_TYPE = 'application/problem+json';
const WWW_AUTHENTICATE = `Bearer realm="${API_REALM}"`;

/** Precomputed `"type":...,"title":...,"status":...,"code":...` fragments, one per code. */
const HEADS = Object.fromEntries(
  Object.entries(ERROR_CATALOGUE).map(([code, entry]) => {
    const url = `${DOCS_URL}/errors#${code}`;
    const head = `{"type":${JSON.stringify(url)},"title":${JSON.stringify(entry.title)},"status":${entry.status},"code":"${code}"`;
    return [code, { head, tail: `,"doc_url":${JSON.stringify(url)}}` }];
  }),
) as Record<ErrorCode, { head: string; tail: string }>;

/** The problem body of `error` for the request `requestId`. */
export function problemBody(error: ApiError, requestId: string): string {
  const { head, tail } = HEADS[error.code];
  const param = error.param === undefined ? '' : `,"param":${JSON.stringify(error.param)}`;
  return `${head},"request_id":"${requestId}"${param}${tail}`;
}

/** Writes `error` as problem+json with the headers its status requires. */
export function sendProblem(reply: FastifyReply, error: ApiError): FastifyReply {
  reply.code(error.status).header('content-type', PROBLEM_TYPE).header('service-request-id', reply.request.id);
  if (error.status === 401) reply.header('www-authenticate', WWW_AUTHENTICATE);
  if (error.status === 429) reply.header('retry-after', String(Math.max(1, Math.ceil(error.retryAfter ?? 1))));
  return reply.send(problemBody(error, reply.request.id));
}

/** Answers like the firewall in front of the API: a bare status, no body, no request id. */
export function sendPlain(reply: FastifyReply, status: 403 | 404 | 429): FastifyReply {
  reply.removeHeader('service-request-id');
  return reply.code(status).send();
}

/** Driver error codes that mean the database cannot be reached right now (PostgreSQL, sockets, SQLite). */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '53300',
  'SQLITE_BUSY',
  'SQLITE_CANTOPEN',
  'SQLITE_IOERR',
  'SQLITE_LOCKED',
]);

function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('SQLITE_IOERR'))) return true;
  const message = (error as { message?: unknown }).message;
  return typeof message === 'string' && /connection terminated|database is closed|not open/i.test(message);
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
  if (fastifyError.validation) return new ApiError('invalid_request', validationParam(fastifyError));
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new ApiError('invalid_request');
  }
  if (isUnavailable(error)) return new ApiError('service_unavailable');
  return new ApiError('internal_error');
}

/** The one error handler: plain 403 for an oversized streamed body, problem+json for everything else. */
export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendPlain(reply, 403);
  const apiError = toApiError(error);
  if (apiError.code === 'internal_error' || apiError.code === 'service_unavailable') {
    // Only the error itself: never headers, keys or bodies.
    request.log.error({ err: error, request_id: request.id }, 'request failed');
  }
  return sendProblem(reply, apiError);
}
