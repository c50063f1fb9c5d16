import type { Server } from 'node:http';
import type { FastifyHttpOptions, FastifyInstance } from 'fastify';
import type { Limits } from '../limits.js';
import { plainClientError } from './client-errors.js';
import { fastifyTrustProxy, type TrustProxy } from './trust-proxy.js';

// How the API's app and the internal listener's app treat connections: the same parser errors, client
// address, time limits and closing behaviour on both ports.

/** The Fastify options for connections, shared by both apps. */
export function connectionOptions(
  limits: Limits,
  trustProxy: TrustProxy | undefined,
): Pick<
  FastifyHttpOptions<Server>,
  | 'clientErrorHandler'
  | 'trustProxy'
  | 'connectionTimeout'
  | 'keepAliveTimeout'
  | 'requestTimeout'
  | 'http'
  | 'forceCloseConnections'
  | 'return503OnClosing'
> {
  return {
    // What Node's HTTP parser refuses gets a bare status, like the firewall (client-errors.ts).
    clientErrorHandler: plainClientError,
    // request.ip, which the firewall budget, lockouts and allowlists read, is the socket's peer unless set.
    ...(trustProxy ? { trustProxy: fastifyTrustProxy(trustProxy) } : {}),
    // Time limits (docs/deploy.md): a silent, trickling or idle client is cut off instead of holding a socket.
    connectionTimeout: limits.idleTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // Node checks the head and request limits on this interval (30 s by default, which let them overrun).
    http: {
      // Given here too so that Node refuses a head limit above the request limit.
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs, limits.requestTimeoutMs),
    },
    // On close: idle keep-alive connections go at once; a request arriving while draining is still served
    // (with `Connection: close`, closeWhenClosing) rather than answered with Fastify's own 503 body.
    forceCloseConnections: 'idle',
    return503OnClosing: false,
  };
}

/**
 * While closing, every response ends its connection: one routed before the signal would otherwise stay
 * open as an idle keep-alive connection until the grace period cuts it.
 */
export function closeWhenClosing(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
}
