import { openFeed } from '../../feed/feed-page.js';
import { FeedPage } from '../../schemas/envelope.js';
import { DEFAULT_PAGE_SIZE, FeedQuery } from '../../schemas/params.js';
import { type Endpoint, endpoint } from '../endpoint.js';

/**
 * GET /v1/sync/changes: the team's changes oldest first (docs/feed.md). The pipeline checks the team
 * (refusals, capture) after the charge (charge.ts); `openFeed` then checks the cursor, the epoch, the
 * feed's end and expiry before anything is read, so a failed request never yields a cursor.
 */
export const FEED_ENDPOINTS: readonly Endpoint[] = [
  endpoint({
    method: 'GET',
    url: '/v1/sync/changes',
    name: 'sync.changes',
    summary: "The team's changes feed, oldest first",
    caller: 'crm:read',
    charge: { rateClass: 'sync', quota: true, items: 'limit' },
    team: { from: 'header', whileUncaptured: 'capture_not_ready' },
    querystring: FeedQuery,
    response: FeedPage,
    // openFeed refuses a cursor that cannot go on (docs/feed.md).
    errors: ['resync_required', 'sync_cursor_expired'],
    handle: async ({ deps, principal, team, query }) => {
      const { store, clock, limits, cursors, feedReadAhead } = deps;
      const feed = await openFeed(
        { store, clock, limits, codec: cursors, readAhead: feedReadAhead },
        { principal, team, cursor: query.cursor, limit: query.limit ?? DEFAULT_PAGE_SIZE },
      );
      return feed.read();
    },
  }),
];
