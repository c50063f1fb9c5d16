import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Static, TSchema } from 'typebox';
import type { Action } from '../manage/action.js';
import { perform } from '../manage/perform.js';
import type { OperatorScope } from '../write/commands/operator-token-state.js';
import type { ConsoleDeps, ConsoleOperator } from './console-deps.js';
import { type ConsoleSessions, sessionOf } from './sessions.js';
import { renderView } from './views.js';

// What every page handler shares: rendering a page in the layout, and running an action of manage/ as the
// signed-in token (its name is the audit trail's actor), after checking the token's scopes.

/** A refusal the console shows as a page (status 303: a redirect to `message`). */
export class ConsoleRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConsoleRefusal';
  }
}

export interface PageContext {
  deps: ConsoleDeps;
  request: FastifyRequest;
  sessions: ConsoleSessions;
}

/** The signed-in operator (a page behind the session check has one). */
export function operatorOf(request: FastifyRequest): ConsoleOperator {
  const session = sessionOf(request);
  if (!session) throw new ConsoleRefusal(401, 'session_required', 'Your session has ended. Sign in again.');
  return session.operator;
}

/** True when the operator's token holds `scope`: the management API's rule (no scope implies another). */
export function mayRun(operator: ConsoleOperator, scope: OperatorScope): boolean {
  return operator.scopes.includes(scope);
}

/** Runs `action` as the signed-in token; a token without the action's scope is refused, as the API refuses it. */
export async function act<I extends TSchema, O extends TSchema>(
  page: PageContext,
  action: Action<I, O>,
  input: Static<I>,
): Promise<Static<O>> {
  const operator = operatorOf(page.request);
  if (!mayRun(operator, action.scope)) {
    throw new ConsoleRefusal(
      403,
      'insufficient_scope',
      `The token ${operator.name} lacks the ${action.scope} scope this needs.`,
    );
  }
  const { result } = await perform(page.deps.manageContext({ name: operator.name }), action, input);
  return result;
}

/** Sends page `view` inside the layout, with the operator and the session's CSRF token. */
export function sendPage(
  reply: FastifyReply,
  request: FastifyRequest,
  view: string,
  data: Record<string, unknown>,
): FastifyReply {
  const session = sessionOf(request);
  const html = renderView(view, {
    ...data,
    operator: session?.operator,
    csrf: session?.csrf,
    canManage: session ? mayRun(session.operator, 'keys') : false,
  });
  return reply.type('text/html; charset=utf-8').send(html);
}
