import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  type AccessControl,
  type DeferredLocks,
  FirewallBlockedError,
  type Principal,
} from '../access/access-control.js';
import { hasWellFormedKey } from '../access/keys.js';
import type { Limits } from '../config.js';
import { ApiError } from '../errors/catalogue.js';
import { handleError, sendPlain } from './problem.js';
import type { Refusal } from './request-log.js';
import { endpointOf } from './route-endpoint.js';

// The firewall in front of the API (spec, "Firewall answers"): bare statuses, no JSON, no request
// id. Runs first on every request, matched or not. A chunked body is counted while it streams by
// Fastify's body limit; the error handler turns that overflow into the same plain 403.

export function firewall(access: AccessControl, limits: Limits) {
  return async function firewallHook(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const method = request.method;
    if ((method !== 'GET' && method !== 'POST') || !request.url.startsWith('/v1/')) {
      return sendPlain(reply, 404, 'firewall_method_or_path');
    }

    const endpoint = endpointOf(request);
    const length = request.headers['content-length'];
    const hasBody = request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
    if (hasBody) {
      // Only an endpoint that declares a body (POST /v1/leads/search) takes one.
      if (method !== 'POST' || endpoint?.body === undefined) {
        return sendPlain(reply, 403, 'firewall_body_not_allowed');
      }
      if (length !== undefined && !(Number(length) <= limits.maxBodyBytes)) {
        return sendPlain(reply, 403, 'firewall_body_too_large');
      }
    }

    // Whether the key is valid is for authentication to say; its shape is read the way authentication reads it.
    const wellFormed = hasWellFormedKey(request.headers.authorization);
    // A route that charges its requests checks the locks of the address with its charge (one Redis round trip);
    // whatever answers before the charge has them checked first (`lockAnswers` in app.ts).
    const deferred: DeferredLocks | undefined =
      endpoint && endpoint.caller !== 'no_key' && endpoint.charge ? { ip: request.ip } : undefined;
    // The request's Redis time, spent by the firewall, the key checks and the charge alike (docs/limits.md).
    const budget = { spentMs: 0 };
    request.redisBudget = budget;
    if (await access.firewallBlocked(request.ip, wellFormed, deferred, budget)) {
      return sendPlain(reply, 429, 'firewall_budget');
    }
    request.deferredLocks = deferred ?? null;

    reply.header('service-request-id', request.id);
    return undefined;
  };
}

/** What a refusal of `authenticate` is logged as. */
const AUTH_REFUSALS: Partial<Record<string, Refusal>> = {
  rate_limited: 'auth_lockout',
  invalid_credentials: 'invalid_credentials',
  key_expired: 'key_expired',
  ip_not_allowed: 'ip_not_allowed',
  secret_key_in_browser: 'secret_key_in_browser',
};

/**
 * Operator switches, then the key, then the scope, as the route's endpoint declares them. Runs after
 * the body is read, so an oversized streamed body gets the firewall's 403 before any key check.
 */
export function accessHook(access: AccessControl) {
  return async function accessCheck(request: FastifyRequest): Promise<void> {
    const endpoint = endpointOf(request);
    if (!endpoint) return;
    await access.checkSwitches(endpoint.name);
    if (endpoint.caller === 'no_key') return;
    let principal: Principal;
    try {
      principal = await access.authenticate({
        authorization: request.headers.authorization,
        origin: request.headers.origin,
        ip: request.ip,
        connection: request.raw.socket,
        deferred: request.deferredLocks ?? undefined,
        budget: request.redisBudget ?? undefined,
      });
    } catch (error) {
      // Logged at warn with the client's address (request-log.ts); a Redis or database fault is not a refusal.
      if (error instanceof ApiError && error.code in AUTH_REFUSALS) request.refusal = AUTH_REFUSALS[error.code] ?? null;
      throw error;
    }
    if (endpoint.caller !== 'any_key') access.requireScope(principal, endpoint.caller);
    request.principal = principal;
  };
}

/**
 * The error handler. A request answered before its charge (a switch, a refusal, a bad parameter, a fault) first
 * has the locks it left to the charge checked, so a blocked or locked-out address gets the answer it would have
 * had with every lock checked up front; then `handleError`.
 */
export function lockAwareErrorHandler(access: AccessControl) {
  const answer = (error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    if (error instanceof FirewallBlockedError) return sendPlain(reply, 429, 'firewall_budget');
    if (request.deferredLocks?.address === 'held') request.refusal = 'auth_lockout';
    return handleError(error as FastifyError, request, reply);
  };
  return function onError(
    error: FastifyError,
    request: FastifyRequest,
    reply: FastifyReply,
  ): FastifyReply | Promise<FastifyReply> {
    const deferred = request.deferredLocks;
    const pending = deferred && (deferred.firewall === 'pending' || deferred.address === 'pending');
    if (!pending || !access.checkDeferred) return answer(error, request, reply);
    return access.checkDeferred(deferred, request.redisBudget ?? undefined).then(
      () => answer(error, request, reply),
      (lockRefusal: unknown) => answer(lockRefusal, request, reply),
    );
  };
}
