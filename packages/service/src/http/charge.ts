import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccessControl, BudgetWindow, RateClass } from '../access/access-control.js';
import { DEFAULT_PAGE_SIZE } from '../schemas/params.js';
import { endpointOf } from './route-endpoint.js';

// Every authenticated request is paid for before the route reads anything (docs/limits.md, "What a request
// costs"): once the key, the scope and the parameters are checked, the route's declared charge is reserved;
// team checks, record lookups and cursors come after it. The reservation is settled when the answer is sent:
// a success keeps what it returned, a refusal keeps one item (sync) or its request (read).

/** What an endpoint costs, part of its declaration (endpoint.ts). */
export interface Charge {
  rateClass: RateClass;
  /** Whether the items returned count toward the daily quota. */
  quota: boolean;
  /** Items set aside up front: the request's `limit` (query or search body) or a fixed number. */
  items: number | 'limit';
}

function limitOf(request: FastifyRequest): number {
  const query = request.query as { limit?: number } | undefined;
  const body = request.body as { limit?: number } | undefined;
  return query?.limit ?? body?.limit ?? DEFAULT_PAGE_SIZE;
}

/** preHandler: the checks of the parameters the schema cannot express, then the reservation. */
export function chargeHook(access: AccessControl) {
  return async function charge(request: FastifyRequest): Promise<void> {
    const endpoint = endpointOf(request);
    if (!endpoint?.charge || !request.principal) return;
    endpoint.checkParams?.({ query: request.query, body: request.body });
    const { rateClass, quota, items } = endpoint.charge;
    const count = items === 'limit' ? limitOf(request) : items;
    request.reservation = await access.reserve(
      request.principal,
      rateClass,
      count,
      quota,
      request.deferredLocks ?? undefined,
      request.redisBudget ?? undefined,
    );
  };
}

/** `RateLimit-Policy`: each item budget's size and window (structured-field list, draft-ietf-httpapi-ratelimit-headers). */
export function rateLimitPolicyHeader(budgets: readonly BudgetWindow[]): string {
  return budgets.map((b) => `"${b.policy}";q=${b.quota};w=${b.windowSeconds}`).join(', ');
}

/** `RateLimit`: what each item budget has left and the seconds until its window ends. */
export function rateLimitHeader(budgets: readonly BudgetWindow[]): string {
  return budgets.map((b) => `"${b.policy}";r=${b.remaining};t=${b.resetSeconds}`).join(', ');
}

/**
 * onSend: settles the reservation with what the answer holds, or as a refusal. A successful sync-class
 * answer also says what the key's item budgets hold after its own items (docs/limits.md, "Budget headers").
 */
export async function settleHook(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  const reservation = request.reservation;
  if (!reservation) return payload;
  request.reservation = null;
  if (reply.statusCode < 400) {
    const budgets = await reservation.settle(request.itemsReturned);
    if (budgets.length > 0) {
      reply.header('ratelimit-policy', rateLimitPolicyHeader(budgets));
      reply.header('ratelimit', rateLimitHeader(budgets));
    }
  } else await reservation.fail();
  return payload;
}
