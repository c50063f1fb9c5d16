import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Static, TSchema } from 'typebox';
import type { Principal } from '../access/access-control.js';
import type { EndpointName } from '../access/endpoints.js';
import type { ErrorCode } from '../errors/catalogue.js';
import type { Scope } from '../schemas/enums.js';
import type { Charge } from './charge.js';
import type { Answer, HttpDeps } from './context.js';
import type { WhileUncaptured } from './team-gate.js';

// An endpoint is one declaration: everything the pipeline (pipeline.ts) applies to its requests, what
// OpenAPI and the scopes table of docs/api.md say of it, and its handler. The hooks read it from the
// route's config through `endpointOf` (route-endpoint.ts).

/** Who may call: a key with this scope, any valid key (/me), or anyone without a key (/health). */
export type Caller = Scope | 'any_key' | 'no_key';

/** A record read by id that names the team the request reads. */
export interface BoundRecord {
  team: string;
}

/**
 * The team a request reads, checked (refusals, sandbox faults, capture) before the handler runs:
 * none (the key's teams as a whole, or no key), the `Service-Team` header, or the record the path names.
 */
export type TeamBinding<R extends BoundRecord = BoundRecord> =
  | { from: 'none' }
  | { from: 'header'; whileUncaptured: WhileUncaptured }
  | {
      from: 'record';
      whileUncaptured: WhileUncaptured;
      /** The record by its path id, or `404 resource_missing` when absent or of a team the key does not read. */
      read(deps: HttpDeps, id: string, principal: Principal): Promise<R>;
    };

/** What a handler gets: the validated input and what the pipeline checked. */
export interface EndpointCall<Q, P, B, R> {
  endpoint: Endpoint;
  deps: HttpDeps;
  request: FastifyRequest;
  reply: FastifyReply;
  query: Q;
  params: P;
  body: B;
  /** The authenticated key (every endpoint but /health). */
  readonly principal: Principal;
  /** The checked team (endpoints bound to a team). */
  readonly team: string;
  /** The record the team came from (`from: 'record'`). */
  readonly record: R;
}

export interface EndpointSpec<Q extends TSchema, P extends TSchema, B extends TSchema, R extends BoundRecord> {
  method: 'GET' | 'POST';
  /** Fastify's path syntax (`/v1/calls/:id`). */
  url: string;
  /** Named by operator and sandbox switches (`capability_disabled`). */
  name: EndpointName;
  summary: string;
  caller: Caller;
  /** What a request costs (charge.ts); null only without a key. */
  charge: Charge | null;
  team: TeamBinding<R>;
  params?: P;
  querystring: Q;
  /** A JSON body, validated without type coercion (strict-validator.ts). */
  body?: B;
  /** The 200 body. */
  response: TSchema;
  /**
   * Error codes of this endpoint alone, beyond those its caller, team binding and charge imply
   * (endpoint-errors.ts derives the rest): the feed's cursor refusals.
   */
  errors?: readonly ErrorCode[];
  /** Checks of the parameters beyond the schema (no store access): they answer 400 before the charge. */
  checkParams?(input: { query: Static<Q>; body: Static<B> }): void;
  handle(call: EndpointCall<Static<Q>, Static<P>, Static<B>, NoInfer<R>>): Promise<Answer>;
}

/** A declaration with its types erased, as the table and the hooks hold it. */
export type Endpoint = EndpointSpec<TSchema, TSchema, TSchema, BoundRecord>;

/** Declares an endpoint; the schemas type its handler's input. */
export function endpoint<Q extends TSchema, P extends TSchema, B extends TSchema, R extends BoundRecord>(
  spec: EndpointSpec<Q, P, B, R>,
): Endpoint {
  return spec as unknown as Endpoint;
}
