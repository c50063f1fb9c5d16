import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../access/access-control.js';
import type { App, HttpDeps } from './context.js';
import { headerTeam, principalOf } from './context.js';
import type { BoundRecord, Endpoint, EndpointCall } from './endpoint.js';
import { responses, secured } from './openapi.js';
import { strictValidatorCompiler } from './strict-validator.js';
import type { TeamGate } from './team-gate.js';

// The one registration of every endpoint declaration. The app's hooks read the declaration from the
// route's config: the firewall (a body only where one is declared), the access hook (switches, key,
// scope) and the charge (checkParams, then the reservation). The handler below binds and checks the team,
// then runs the declared handler and sends its answer.

const JSON_TYPE = 'application/json; charset=utf-8';

/** The Fastify route schema of a declaration: what validation and OpenAPI read. */
function routeSchema(endpoint: Endpoint) {
  const { name, summary, params, querystring, body, caller, team } = endpoint;
  return {
    operationId: name,
    summary,
    ...(params ? { params } : {}),
    querystring,
    ...(body ? { body } : {}),
    response: responses(endpoint),
    ...(caller === 'no_key' ? { security: [] } : secured(team.from === 'header')),
  };
}

/** The team the request reads, checked, with the record it came from (none for `from: 'none'`). */
async function bindTeam(
  endpoint: Endpoint,
  deps: HttpDeps,
  gate: TeamGate,
  request: FastifyRequest,
  principal: Principal,
): Promise<{ team?: string; record?: BoundRecord }> {
  const binding = endpoint.team;
  if (binding.from === 'none') return {};
  let record: BoundRecord | undefined;
  let team: string;
  if (binding.from === 'header') team = headerTeam(request, principal);
  else {
    record = await binding.read(deps, (request.params as { id: string }).id, principal);
    team = record.team;
  }
  // The request log names the team once a request got this far.
  request.team = team;
  await gate(principal, team, { name: endpoint.name, whileUncaptured: binding.whileUncaptured });
  return { team, ...(record ? { record } : {}) };
}

/**
 * What a declared handler gets. A class, not an object literal with getters: V8 makes a literal's getters
 * at run time, their accessor pair in the old generation, and that pair pointed at closures over the
 * request. Young collections could then free nothing the request held, so every request's garbage moved to
 * the old generation (about 1.7 KB a request), tens of MB under load until a full collection
 * (docs/performance.md, "The route handler's call is a class").
 */
class Call implements EndpointCall<unknown, unknown, unknown, BoundRecord> {
  readonly query: unknown;
  readonly params: unknown;
  readonly body: unknown;

  constructor(
    readonly endpoint: Endpoint,
    readonly deps: HttpDeps,
    readonly request: FastifyRequest,
    readonly reply: FastifyReply,
    private readonly bound: { team?: string; record?: BoundRecord },
  ) {
    this.query = request.query;
    this.params = request.params;
    this.body = request.body;
  }

  get principal(): Principal {
    return principalOf(this.request);
  }

  get team(): string {
    if (this.bound.team === undefined) throw new Error(`${this.endpoint.name} reads no team`);
    return this.bound.team;
  }

  get record(): BoundRecord {
    if (this.bound.record === undefined) throw new Error(`${this.endpoint.name} reads no record`);
    return this.bound.record;
  }
}

function register(app: App, deps: HttpDeps, gate: TeamGate, endpoint: Endpoint): void {
  app.route({
    method: endpoint.method,
    url: endpoint.url,
    config: { endpoint },
    ...(endpoint.body ? { validatorCompiler: strictValidatorCompiler } : {}),
    schema: routeSchema(endpoint),
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const principal = endpoint.caller === 'no_key' ? null : principalOf(request);
      const bound = principal ? await bindTeam(endpoint, deps, gate, request, principal) : {};
      const call = new Call(endpoint, deps, request, reply, bound);
      const answer = await endpoint.handle(call);
      request.itemsReturned = answer.items;
      reply.header('content-type', JSON_TYPE);
      for (const [name, value] of Object.entries(answer.headers ?? {})) reply.header(name, value);
      // The payload itself, not `reply`: an async handler returning the reply makes the promise adopt it as a
      // thenable, which waits for the response to finish (listeners on every answer) for nothing.
      return answer.json;
    },
  });
}

/** Registers each declaration, in order (the order of OpenAPI's paths). */
export function registerEndpoints(app: App, deps: HttpDeps, gate: TeamGate, endpoints: readonly Endpoint[]): void {
  for (const endpoint of endpoints) register(app, deps, gate, endpoint);
}
