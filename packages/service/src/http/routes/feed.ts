import { openFeed } from '../../feed/feed-page.js';
import { FeedPage } from '../../schemas/envelope.js';
import { DEFAULT_PAGE_SIZE, FeedQuery } from '../../schemas/params.js';
import type { App, HttpDeps } from '../context.js';
import { answered, headerTeam, principalOf } from '../context.js';
import { responses, secured } from '../openapi.js';

export { feedItemJson } from '../../feed/feed-page.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * GET /v1/sync/changes: the team's changes oldest first (docs/feed.md). `openFeed` runs every check
 * (team refusal, capture, cursor, epoch, feed end, expiry) after the charge (charge.ts) and before
 * anything is read; a failed request never yields a cursor.
 */
export function registerFeedRoutes(app: App, deps: HttpDeps): void {
  const { store, access, cursors, clock, limits } = deps;
  app.get(
    '/v1/sync/changes',
    {
      config: {
        endpoint: {
          endpoint: 'sync.changes',
          auth: true,
          scope: 'crm:read',
          charge: { rateClass: 'sync', quota: true, items: 'limit' },
        },
      },
      schema: {
        summary: "The team's changes feed, oldest first",
        querystring: FeedQuery,
        response: responses(FeedPage, true),
        ...secured(true),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const team = headerTeam(request, principal);
      const limit = request.query.limit ?? DEFAULT_PAGE_SIZE;
      const feed = await openFeed(
        { store, clock, limits, codec: cursors, access },
        { principal, team, cursor: request.query.cursor, limit },
      );
      const json = await answered(request, () => feed.read());
      return reply.header('content-type', JSON_TYPE).send(json);
    },
  );
}
