import type { FastifyReply, FastifyRequest } from 'fastify';
import ipaddr from 'ipaddr.js';
import type { Logger } from 'pino';
import type { RequestOutcome } from '../metrics/metrics.js';
import type { TrustProxy } from './trust-proxy.js';

// One log line per request (docs/operations.md, "Request log"), written when the answer has been sent.
// Only what an operator needs to follow a request: ids, the route *template* (never the URL, which holds
// record ids and query strings), status, error code, timing, who and how much. Never a header value other
// than a proxy's request id, a body, a key, a cursor or anything about a person. Refusals of the firewall
// and failed authentications are written at warn with the reason and the client's address.

/** Why the firewall or authentication refused a request (warn lines). */
export type Refusal =
  | 'firewall_method_or_path'
  | 'firewall_body_not_allowed'
  | 'firewall_body_too_large'
  | 'firewall_budget'
  | 'auth_lockout'
  | 'invalid_credentials'
  | 'key_expired'
  | 'ip_not_allowed'
  | 'secret_key_in_browser';

/** A proxy's request id: printable, no spaces, at most 128 characters; anything else is not logged. */
const UPSTREAM_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** Whether the socket's peer is a trusted proxy, so that its `X-Request-Id` may be believed. */
export function peerTrusted(trust: TrustProxy | undefined): (peer: string | undefined) => boolean {
  if (!trust) return () => false;
  // A hop count trusts whatever talks to the port (the API sits behind the proxies by deployment).
  if ('hops' in trust) return () => true;
  const ranges = trust.addresses.map((entry) => {
    const [address, bits] = entry.includes('/') ? ipaddr.parseCIDR(entry) : [ipaddr.parse(entry), -1];
    return { address, bits: bits === -1 ? (address.kind() === 'ipv4' ? 32 : 128) : bits };
  });
  return (peer) => {
    if (peer === undefined || !ipaddr.isValid(peer)) return false;
    let parsed = ipaddr.parse(peer);
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
      parsed = (parsed as ipaddr.IPv6).toIPv4Address();
    }
    return ranges.some(({ address, bits }) => address.kind() === parsed.kind() && parsed.match(address, bits));
  };
}

/** What the request log line says of a finished request (also what the metrics count). */
/** The route template, or a fixed word for a request no route matched (the URL itself is never used). */
export function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? 'unmatched';
}

export function outcomeOf(request: FastifyRequest, reply: FastifyReply): RequestOutcome {
  const length = Number(reply.getHeader('content-length'));
  return {
    route: routeOf(request),
    status: reply.statusCode,
    code: request.errorCode,
    ms: Math.round(reply.elapsedTime * 10) / 10,
    items: reply.statusCode < 400 ? request.itemsReturned : 0,
    bytes: Number.isFinite(length) ? length : 0,
  };
}

/** The onResponse hook writing the line; `trust` says whose `X-Request-Id` is believed. */
export function requestLogger(logger: Logger, trust: TrustProxy | undefined) {
  const trusted = peerTrusted(trust);
  return function logRequest(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const outcome = outcomeOf(request, reply);
    const upstream = request.headers['x-request-id'];
    const line: Record<string, unknown> = {
      request_id: request.id,
      ...(typeof upstream === 'string' && UPSTREAM_ID.test(upstream) && trusted(request.socket.remoteAddress)
        ? { upstream_request_id: upstream }
        : {}),
      method: request.method,
      route: outcome.route,
      status: outcome.status,
      code: outcome.code,
      ms: outcome.ms,
      integration: request.principal?.integrationId ?? null,
      team: request.team,
      items: outcome.items,
      bytes: outcome.bytes,
    };
    if (request.refusal) {
      line.reason = request.refusal;
      line.client = request.ip;
      logger.warn(line, 'request refused');
    } else {
      logger.info(line, 'request');
    }
    done();
  };
}
