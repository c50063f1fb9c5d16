import { AsyncLocalStorage } from 'node:async_hooks';
import type { AccessControl, Principal } from '../access/access-control.js';
import { ApiError } from '../errors/catalogue.js';
import type { Store } from '../store/store.js';
import { assertCaptured, assertRecordCaptured } from './capture.js';

// Capture checks for every endpoint without touching each route: every route calls
// `access.checkTeam` for the team it reads, so the HTTP layer wraps that one call. Whether the
// request reads one record by id (404 resource_missing while not prepared) or a team's data (409
// capture_not_ready) comes from the route's URL, carried by a request-scoped async context.

/** What the gate needs to know of the request being served. */
interface RequestScope {
  /** The route reads one record by id (`/v1/calls/:id`, `/v1/leads/:id/activities`...). */
  singleRecord: boolean;
  /** The endpoint's name (`leads.list`...), for the team's sandbox capability switches. */
  endpoint: string | undefined;
  /** The request, which the request log reads its team from. */
  request: { team?: string | null };
}

export interface CaptureGate {
  /** The access control to hand to the routes: `checkTeam` also checks capture. */
  access: AccessControl;
  /** A callback-style Fastify hook (onRequest / preHandler) that tells the gate which route runs. */
  hook(
    request: {
      routeOptions: { url?: string | undefined; config?: { endpoint?: { endpoint: string } | undefined } };
      team?: string | null;
    },
    reply: unknown,
    done: () => void,
  ): void;
}

export function captureGate(access: AccessControl, store: Pick<Store, 'getEntity'>): CaptureGate {
  const scope = new AsyncLocalStorage<RequestScope>();
  return {
    access: {
      firewallBlocked: (ip, hasKey, deferred) => access.firewallBlocked(ip, hasKey, deferred),
      checkSwitches: (endpoint) => access.checkSwitches(endpoint),
      authenticate: (request) => access.authenticate(request),
      requireScope: (principal, s) => access.requireScope(principal, s),
      reserve: (principal, rateClass, items, quota, deferred) =>
        access.reserve(principal, rateClass, items, quota, deferred),
      ...(access.checkDeferred ? { checkDeferred: access.checkDeferred.bind(access) } : {}),
      async checkTeam(principal: Principal, team: string): Promise<void> {
        const current = scope.getStore();
        if (current) current.request.team = team;
        await access.checkTeam(principal, team);
        // Sandbox faults of an example team (docs/testing-your-consumer.md), after the team's own refusals.
        const faults = await access.sandboxFaults?.(principal, team);
        if (faults && current?.endpoint !== undefined && faults.capabilitiesOff.includes(current.endpoint))
          throw new ApiError('capability_disabled');
        if (current?.singleRecord) await assertRecordCaptured(store, team);
        else await assertCaptured(store, team);
        if (faults?.notReady) throw new ApiError(current?.singleRecord ? 'resource_missing' : 'capture_not_ready');
      },
      sandboxFaults: (principal, team) => access.sandboxFaults?.(principal, team) ?? Promise.resolve(undefined),
    },
    hook(request, _reply, done) {
      scope.run(
        {
          singleRecord: (request.routeOptions.url ?? '').includes('/:id'),
          endpoint: request.routeOptions.config?.endpoint?.endpoint,
          request,
        },
        done,
      );
    },
  };
}
