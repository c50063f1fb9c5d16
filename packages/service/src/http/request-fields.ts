import type { DeferredLocks, Principal, RequestBudget, Reservation } from '../access/access-control.js';
import type { OperatorPrincipal } from '../access/operator-tokens.js';
import type { OperatorScope } from '../write/commands/operator-token-state.js';
import type { App } from './context.js';
import type { Endpoint } from './endpoint.js';
import type { ProblemBodies } from './problem.js';
import type { Refusal } from './request-log.js';

// Everything the app adds to Fastify's types, in one place: the fields a request carries through the
// pipeline, each with who sets it and when, and their starting values.

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the access hook (access-hook.ts) once the key is authenticated; null for a no-key endpoint. */
    principal: Principal | null;
    /** Set by the charge hook (charge.ts) before the handler; settled and cleared by `settleHook` on send. */
    reservation: Reservation | null;
    /** Set by the pipeline (pipeline.ts) from the handler's answer, for the quota; 0 until then. */
    itemsReturned: number;
    /** Set by the firewall (firewall.ts) on charged routes: the address's lock checks left to the charge. */
    deferredLocks: DeferredLocks | null;
    /** Set by the firewall (firewall.ts) before its budget check: the request's Redis time, spent by every check. */
    redisBudget: RequestBudget | null;
    /** Set by `sendProblem` (problem.ts) when a problem body is answered: its error code. */
    errorCode: string | null;
    /** Set by `sendPlain` (problem.ts), the access hook or the error handler when a request is refused. */
    refusal: Refusal | null;
    /** Set by the pipeline's team binding (pipeline.ts) once the team the request reads is known. */
    team: string | null;
    /** Set by `endpointOf` (route-endpoint.ts) on first read: the route's declaration, undefined when unmatched. */
    routeEndpoint: Endpoint | undefined | null;
    /**
     * Internal listener only: set by its auth hook (internal/operator-auth.ts) once the operator token is
     * verified, or by a surface that signs in another way (a console session); null until then.
     */
    operator: OperatorPrincipal | null;
  }
  interface FastifyContextConfig {
    /** Set by `registerEndpoints` (pipeline.ts): the declaration the route was registered from. */
    endpoint?: Endpoint;
    /**
     * Internal listener only: the token scope the route needs, or `none` when the surface authenticates by
     * itself (the console's sign-in). Every internal route declares one (internal/internal-app.ts refuses
     * a route without).
     */
    operatorScope?: OperatorScope | 'none';
  }
  interface FastifyInstance {
    /** Set by `buildApp` (app.ts): this app's problem bodies (its docs URL). */
    problems: ProblemBodies;
  }
}

/** Gives every request the fields above, at their starting values, in the order declared. */
export function decorateRequestFields(app: App): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('reservation', null);
  app.decorateRequest('itemsReturned', 0);
  app.decorateRequest('deferredLocks', null);
  app.decorateRequest('redisBudget', null);
  app.decorateRequest('errorCode', null);
  app.decorateRequest('refusal', null);
  app.decorateRequest('team', null);
  app.decorateRequest('routeEndpoint', null);
  app.decorateRequest('operator', null);
}
