import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccessControl } from '../access/access-control.js';
import type { Limits } from '../config.js';
import { sendPlain } from './problem.js';

// The firewall in front of the API (spec, "Firewall answers"): bare statuses, no JSON, no request
// id. Runs first on every request, matched or not. A chunked body is counted while it streams by
// Fastify's body limit; the error handler turns that overflow into the same plain 403.

const SEARCH_PATH = '/v1/leads/search';
/** `Bearer` plus a key of the documented shape; whether it is valid is for authentication to say. */
const WELL_FORMED_KEY = /^Bearer crmx_(?:live|test)_[0-9A-Za-z]+$/;

export function firewall(access: AccessControl, limits: Limits) {
  return async function firewallHook(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const method = request.method;
    if ((method !== 'GET' && method !== 'POST') || !request.url.startsWith('/v1/')) return sendPlain(reply, 404);

    const length = request.headers['content-length'];
    const hasBody = request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
    if (hasBody) {
      if (method !== 'POST' || request.routeOptions.url !== SEARCH_PATH) return sendPlain(reply, 403);
      if (length !== undefined && !(Number(length) <= limits.maxBodyBytes)) return sendPlain(reply, 403);
    }

    const authorization = request.headers.authorization;
    const wellFormed = authorization !== undefined && WELL_FORMED_KEY.test(authorization);
    if (await access.firewallBlocked(request.ip, wellFormed)) return sendPlain(reply, 429);

    reply.header('service-request-id', request.id);
    return undefined;
  };
}

/**
 * Operator switches, then the key, then the scope, for routes that declare an endpoint. Runs after
 * the body is read, so an oversized streamed body gets the firewall's 403 before any key check.
 */
export function accessHook(access: AccessControl) {
  return async function accessCheck(request: FastifyRequest): Promise<void> {
    const config = request.routeOptions.config.endpoint;
    if (!config) return;
    await access.checkSwitches(config.endpoint);
    if (!config.auth) return;
    const principal = await access.authenticate({
      authorization: request.headers.authorization,
      origin: request.headers.origin,
      ip: request.ip,
    });
    if (config.scope) access.requireScope(principal, config.scope);
    request.principal = principal;
  };
}
