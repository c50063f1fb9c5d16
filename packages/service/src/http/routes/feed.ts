import { openFeed } from '../../feed/feed-page.js';
import { FeedPage } from '../../schemas/envelope.js';
import { FeedQuery } from '../../schemas/params.js';
import type { App, HttpDeps } from '../context.js';
import { headerTeam, principalOf, withReservation } from '../context.js';
import { responses, secured } from '../openapi.js';

export { feedItemJson } from '../../feed/feed-page.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const DEFAULT_LIMIT = 25;

/**
 * GET /v1/sync/changes: the team's changes oldest first (docs/feed.md). `openFeed` runs every check
 * (team refusal, capture, cursor, epoch, feed end, expiry) before the quota is reserved; a failed
 * request never yields a cursor.
 */
export function registerFeedRoutes(app: App, deps: HttpDeps): void {
  const { store, access, cursors, clock, limits } = deps;
  app.get(
    '/v1/sync/changes',
    {
      config: { endpoint: { endpoint: 'sync.changes', auth: true, scope: 'crm:read' } },
      schema: {
        summary: "The team's changes feed, oldest first",
        querystring: FeedQuery,
        response: responses(FeedPage),
        ...secured(true),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const team = headerTeam(request, principal);
      const limit = request.query.limit ?? DEFAULT_LIMIT;
      const feed = await openFeed(
        { store, clock, limits, codec: cursors, access },
        { principal, team, cursor: request.query.cursor, limit },
      );
      const json = await withReservation(access, principal, 'sync', limit, true, () => feed.read());
      return reply.header('content-type', JSON_TYPE).send(json);
    },
  );
}
