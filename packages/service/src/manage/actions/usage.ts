import { Type } from 'typebox';
import { getIntegration } from '../../access/integrations.js';
import { integrationUsage, recentFailures, requestLogPage } from '../../usage/usage-reads.js';
import { type Action, action } from '../action.js';
import { ManageId } from '../schemas.js';

// What the request log recorded (usage/, docs/request-log.md): one integration's usage against its limits,
// recent failures by code and endpoint, and the request log. Reads only; never a key, a cursor, a search
// criterion or record content, since the log holds none.

const AnyObject = (description: string) => Type.Unsafe<Record<string, unknown>>({ type: 'object', description });
const Hours = Type.Integer({ minimum: 1, maximum: 24 * 31, description: 'the last N hours (default 24)' });

export const usageAction = action({
  name: 'usage.get',
  summary:
    "One integration's usage: items this minute against the rate limit, today against the quota, refusals by reason, items per hour",
  scope: 'read',
  input: Type.Object({ id: ManageId }, { additionalProperties: false }),
  output: AnyObject('minute, today, countersShared, refusals, itemsPerHour (24 hours), recording'),
  run: async ({ store, clock, limits, counters }, i) => {
    const integration = await getIntegration(store, clock, i.id);
    return (await integrationUsage(
      { store, clock, limits, ...(counters ? { counters } : {}) },
      i.id,
      integration.keys.map((k) => k.id),
    )) as unknown as Record<string, unknown>;
  },
});

export const failuresAction = action({
  name: 'failures.list',
  summary: 'Recent failed requests by code and endpoint, most first',
  scope: 'read',
  input: Type.Object(
    { integration: Type.Optional(ManageId), hours: Type.Optional(Hours) },
    { additionalProperties: false },
  ),
  output: Type.Array(
    Type.Object({ code: Type.String(), endpoint: Type.String(), count: Type.Integer(), lastAt: Type.String() }),
  ),
  run: async ({ store, clock }, i) => {
    if (i.integration) await getIntegration(store, clock, i.integration);
    return recentFailures({ store, clock }, i.integration ?? null, i.hours ?? 24);
  },
});

export const requestsAction = action({
  name: 'requests.list',
  summary:
    "An integration's request log, newest first: time, request id, endpoint template, status, code, items, address",
  scope: 'read',
  input: Type.Object(
    {
      id: ManageId,
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
      after: Type.Optional(Type.String({ maxLength: 200, description: 'the `next` of the previous page' })),
      since: Type.Optional(Type.String({ maxLength: 40 })),
      until: Type.Optional(Type.String({ maxLength: 40 })),
      status: Type.Optional(Type.Integer({ minimum: 100, maximum: 599 })),
      failed: Type.Optional(Type.Boolean()),
      code: Type.Optional(Type.String({ maxLength: 64 })),
      endpoint: Type.Optional(Type.String({ maxLength: 200, description: 'a route template, e.g. /v1/leads' })),
    },
    { additionalProperties: false },
  ),
  output: Type.Object({
    entries: Type.Array(AnyObject('at, requestId, integration, method, endpoint, status, code, items, address')),
    next: Type.Union([Type.String(), Type.Null()]),
  }),
  run: async ({ store, clock }, { id, ...filter }) => {
    await getIntegration(store, clock, id);
    return (await requestLogPage(store, { integration: id, ...filter })) as never;
  },
});

export const USAGE_ACTIONS: readonly Action[] = [usageAction, failuresAction, requestsAction];
