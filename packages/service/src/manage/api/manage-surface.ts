import type { FastifyReply, FastifyRequest } from 'fastify';
import { Value } from 'typebox/value';
import { AdminError, type AdminErrorCode } from '../../errors/admin-error.js';
import { ApiError, type ErrorCode } from '../../errors/catalogue.js';
import type { App } from '../../http/context.js';
import type { InternalSurface } from '../../http/internal-surface.js';
import { toApiError } from '../../http/problem.js';
import type { Actor } from '../action.js';
import { type ManageSurfaceContext, manageContextFor } from '../context.js';
import { perform } from '../perform.js';
import type { ManageEndpoint } from './endpoint.js';
import { restOfInput } from './endpoint.js';
import { MANAGE_ENDPOINTS } from './endpoints.js';
import { IdempotencyClaim, type StoredAnswer } from './idempotency.js';
import { managementDocs } from './reference.js';

// The management API on the internal listener (docs/management.md): every declaration of endpoints.ts
// becomes a route that runs its action through `perform`, as the `admin` command does. The listener's hook
// has checked the operator token and the action's scope before the body is read.

/** The largest body a management request may send (413 body_too_large beyond). */
export const MANAGE_MAX_BODY_BYTES = 64 * 1024;
const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json';
/** A person's name or id as the caller passes it: no control characters. */
const ON_BEHALF_OF = /^(?!\s)[^\p{Cc}]{1,200}$/u;

/** How an action's refusal answers: its code where the catalogue has one, `action_refused` otherwise. */
const REFUSALS: Partial<Record<AdminErrorCode, ErrorCode>> = {
  not_found: 'resource_missing',
  invalid_argument: 'invalid_request',
  plan_not_entitled: 'plan_not_entitled',
  team_state_restricted: 'team_state_restricted',
  sector_restricted: 'sector_restricted',
};

export const manageSurface: InternalSurface = {
  prefix: '/manage/v1',
  register(app: App, context) {
    const docs = managementDocs();
    for (const endpoint of MANAGE_ENDPOINTS) {
      app.route({
        method: endpoint.method,
        url: endpoint.url,
        bodyLimit: MANAGE_MAX_BODY_BYTES,
        config: { operatorScope: endpoint.action.scope },
        handler: (request, reply) => handle(endpoint, context as ManageSurfaceContext, request, reply),
      });
    }
    docs.register(app);
  },
};

async function handle(
  endpoint: ManageEndpoint,
  context: ManageSurfaceContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const operator = request.operator;
  if (!operator) throw new ApiError('invalid_token');
  const actor: Actor = { name: operator.name };
  const onBehalfOf = request.headers['on-behalf-of'];
  if (onBehalfOf !== undefined) {
    if (typeof onBehalfOf !== 'string' || !ON_BEHALF_OF.test(onBehalfOf))
      throw new ApiError('invalid_request', { param: 'On-Behalf-Of' });
    actor.onBehalfOf = onBehalfOf;
  }
  const input = inputOf(endpoint, request);
  if (endpoint.method === 'GET') return send(reply, await answer(endpoint, context, actor, input));

  const idempotency = await IdempotencyClaim.claim(
    context.store,
    context.clock.now(),
    operator.name,
    request.headers['idempotency-key'],
    { method: request.method, url: request.url, body: request.body },
  );
  if (idempotency && 'replay' in idempotency) {
    reply.header('idempotent-replayed', 'true');
    return send(reply, idempotency.replay);
  }
  let result: StoredAnswer;
  try {
    result = await answer(endpoint, context, actor, input);
  } catch (error) {
    // A fault of the service: the key is freed, so the same request may be tried again.
    await idempotency?.claim.release().catch(() => {});
    throw error;
  }
  await idempotency?.claim.finish(result);
  return send(reply, result);
}

/** The action's input: the path's fields, then the query string (GET, converted to the schema's types) or body. */
function inputOf(endpoint: ManageEndpoint, request: FastifyRequest): Record<string, unknown> {
  const params = request.params as Record<string, string>;
  let rest: unknown;
  if (endpoint.method === 'GET') {
    rest = Value.Convert(restOfInput(endpoint), { ...(request.query as object) });
  } else {
    rest = request.body ?? {};
    if (typeof rest !== 'object' || rest === null || Array.isArray(rest)) throw new ApiError('invalid_request');
  }
  const input: Record<string, unknown> = { ...(rest as object) };
  for (const [param, field] of Object.entries(endpoint.path ?? {})) input[field] = params[param];
  return input;
}

/**
 * Runs the action and gives its answer: the result, or the problem of a refusal (both kept for an
 * Idempotency-Key). A failure of the service is thrown, and answered by the listener's error handler.
 */
async function answer(
  endpoint: ManageEndpoint,
  context: ManageSurfaceContext,
  actor: Actor,
  input: unknown,
): Promise<StoredAnswer> {
  try {
    const { result } = await perform(manageContextFor(context, actor), endpoint.action, input);
    return { status: endpoint.status ?? 200, contentType: JSON_TYPE, body: JSON.stringify(result) };
  } catch (error) {
    if (error instanceof AdminError) return refusal(error);
    const apiError = toApiError(error);
    if (apiError.status >= 500) throw error;
    return problem(apiError, {});
  }
}

/** An action's refusal as a problem body: the catalogue's code, the action's own code as `reason`, and its message. */
function refusal(error: AdminError): StoredAnswer {
  const code = REFUSALS[error.code] ?? 'action_refused';
  return problem(new ApiError(code, error.param === undefined ? {} : { param: error.param }), {
    reason: error.code,
    detail: error.message,
  });
}

/** The answer of `error`; its body is completed per request (`send`). */
function problem(error: ApiError, extra: Record<string, string>): StoredAnswer {
  return {
    status: error.status,
    contentType: PROBLEM_TYPE,
    body: JSON.stringify({ code: error.code, param: error.param, extra }),
  };
}

function send(reply: FastifyReply, stored: StoredAnswer): FastifyReply {
  if (stored.contentType !== PROBLEM_TYPE) {
    return reply.code(stored.status).header('content-type', stored.contentType).send(stored.body);
  }
  const { code, param, extra } = JSON.parse(stored.body) as {
    code: ErrorCode;
    param?: string;
    extra: Record<string, string>;
  };
  const apiError = new ApiError(code, param === undefined ? {} : { param });
  reply.request.errorCode = code;
  const body = reply.server.problems.body(apiError, reply.request.id);
  const members = Object.entries(extra)
    .map(([name, value]) => `,${JSON.stringify(name)}:${JSON.stringify(value)}`)
    .join('');
  return reply
    .code(stored.status)
    .header('content-type', PROBLEM_TYPE)
    .header('service-request-id', reply.request.id)
    .send(`${body.slice(0, -1)}${members}}`);
}
