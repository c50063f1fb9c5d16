import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccessControl, DeferredLocks } from '../access/access-control.js';
import { hasWellFormedKey } from '../access/keys.js';
import type { Limits } from '../limits.js';
import { sendPlain } from './problem.js';
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
    // whatever answers before the charge has them checked first (lock-aware-error-handler.ts).
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
