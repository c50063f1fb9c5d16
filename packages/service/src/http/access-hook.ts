import type { FastifyRequest } from 'fastify';
import type { AccessControl, Principal } from '../access/access-control.js';
import { ApiError } from '../errors/catalogue.js';
import type { Refusal } from './request-log.js';
import { endpointOf } from './route-endpoint.js';

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
