import type { FastifyReply, FastifyRequest } from 'fastify';
import { bearerToken, parseKey } from '../access/keys.js';
import type { Clock } from '../clock.js';
import type { UsageRecorder } from '../usage/recorder.js';
import { routeOf } from './request-log.js';

// The onResponse hook that hands each answered request to the usage recorder (usage/recorder.ts,
// docs/request-log.md): the route template (never the URL), status, code, items and the client's address.
// Never a header, a query, a body or a key: a refused key is named by its lookup id, which the recorder
// turns into its integration and then forgets. A request with no key that succeeded (the health check) is
// nobody's traffic and is not recorded.

/** Why a request failed, as the usage counts name it: a lockout apart from the rate limit. */
function reasonOf(request: FastifyRequest, code: string | null): string {
  if (request.refusal === 'auth_lockout') return 'locked_out';
  return code ?? '';
}

export function usageHook(recorder: UsageRecorder, clock: Clock) {
  return function recordUsage(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const status = reply.statusCode;
    const principal = request.principal;
    if (principal === null && status < 400) {
      done();
      return;
    }
    const code = status < 400 ? null : (request.errorCode ?? request.refusal ?? `http_${status}`);
    let presentedKey: string | null = null;
    if (principal === null) {
      const token = bearerToken(request.headers.authorization);
      presentedKey = token === undefined ? null : (parseKey(token)?.lookupId ?? null);
    }
    recorder.record({
      // When the request arrived: a client's next request may reach another worker before this hook runs, and
      // the order of arrivals is the order the client sent them in.
      at: Math.round(clock.now() - reply.elapsedTime),
      integration: principal?.integrationId ?? null,
      keyId: principal?.keyId ?? null,
      presentedKey,
      requestId: request.id,
      method: request.method,
      route: routeOf(request),
      status,
      code,
      reason: reasonOf(request, code),
      items: status < 400 ? request.itemsReturned : 0,
      address: request.ip,
    });
    done();
  };
}
