import type { FastifyRequest } from 'fastify';

// The route's endpoint declaration as the hooks read it (`routeEndpoint` is declared in request-fields.ts).

/**
 * The declaration of the route a request matched, or undefined for an unmatched URL. Read once per request:
 * Fastify builds a new `routeOptions` object on every access, and the firewall, the access check and the
 * charge all ask.
 */
export function endpointOf(request: FastifyRequest) {
  if (request.routeEndpoint === null) request.routeEndpoint = request.routeOptions.config.endpoint;
  return request.routeEndpoint;
}
