import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { type AccessControl, FirewallBlockedError } from '../access/access-control.js';
import { handleError, sendPlain } from './problem.js';

/**
 * The error handler. A request answered before its charge (a switch, a refusal, a bad parameter, a fault) first
 * has the locks it left to the charge checked, so a blocked or locked-out address gets the answer it would have
 * had with every lock checked up front; then `handleError`.
 */
export function lockAwareErrorHandler(access: AccessControl) {
  const answer = (error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    if (error instanceof FirewallBlockedError) return sendPlain(reply, 429, 'firewall_budget');
    if (request.deferredLocks?.address === 'held') request.refusal = 'auth_lockout';
    return handleError(error as FastifyError, request, reply);
  };
  return function onError(
    error: FastifyError,
    request: FastifyRequest,
    reply: FastifyReply,
  ): FastifyReply | Promise<FastifyReply> {
    const deferred = request.deferredLocks;
    const pending = deferred && (deferred.firewall === 'pending' || deferred.address === 'pending');
    if (!pending || !access.checkDeferred) return answer(error, request, reply);
    return access.checkDeferred(deferred, request.redisBudget ?? undefined).then(
      () => answer(error, request, reply),
      (lockRefusal: unknown) => answer(lockRefusal, request, reply),
    );
  };
}
