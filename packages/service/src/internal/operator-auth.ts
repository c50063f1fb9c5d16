import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OperatorTokenAuth } from '../access/operator-tokens.js';
import { sendProblem, toApiError } from '../http/problem.js';

// The internal listener's auth hook: before the body is read, the route's declared scope is checked against
// the Bearer token (access/operator-tokens.ts). Missing or wrong token: 401 invalid_token (an API key: 401
// api_key_not_token); a token without the scope: 403 insufficient_scope; too many failures: 429.

export function operatorAuthHook(tokens: OperatorTokenAuth) {
  return async function operatorAuth(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const scope = request.routeOptions.config.operatorScope;
    // No route matched (the not-found handler answers), or the surface signs in by itself.
    if (scope === undefined || scope === 'none') return undefined;
    try {
      const principal = await tokens.authenticate({
        authorization: request.headers.authorization,
        ip: request.ip,
        connection: request.raw.socket,
      });
      tokens.requireScope(principal, scope);
      request.operator = principal;
      return undefined;
    } catch (error) {
      // Answered here, before the body: a refused request never gets its body parsed.
      return sendProblem(reply, toApiError(error));
    }
  };
}
