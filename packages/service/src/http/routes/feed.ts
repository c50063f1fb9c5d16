import { FeedPage } from '../../schemas/envelope.js';
import { FeedQuery } from '../../schemas/params.js';
import type { FeedRow } from '../../store/store.js';
import type { App, HttpDeps } from '../context.js';
import { headerTeam, principalOf, withReservation } from '../context.js';
import { decodeFeedCursor, encodeFeedCursor, type FeedPosition } from '../feed-cursor.js';
import { responses, secured } from '../openapi.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const DEFAULT_LIMIT = 25;

/** One feed item from a stored entry: the record's stored JSON or the removal, never re-serialized. */
export function feedItemJson(row: FeedRow): string {
  const head = `{"kind":"${row.kind}","id":"${row.id}","version":${row.version},`;
  return row.removed !== null || row.body === null
    ? `${head}"removed":{"reason":"${row.removed ?? 'deleted'}"}}`
    : `${head}"object":${row.body}}`;
}

/** GET /v1/sync/changes: the team's changes oldest first, holding back the newest `feedHoldBackMs`. */
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
      await access.checkTeam(principal, team);
      const limit = request.query.limit ?? DEFAULT_LIMIT;
      const now = clock.now();
      const from: FeedPosition = request.query.cursor
        ? decodeFeedCursor(cursors, team, request.query.cursor)
        : { pos: 0, reachedAt: now, initialSyncStartedAt: now };
      const json = await withReservation(access, principal, 'sync', limit, true, async () => {
        const rows = await store.readFeed(team, from.pos, limit + 1);
        // Stop at the first entry recorded inside the hold-back window: what follows is not ready yet.
        const cutoff = now - limits.feedHoldBackMs;
        let ready = 0;
        while (ready < rows.length && (rows[ready] as FeedRow).recordedAt <= cutoff) ready++;
        const hasMore = ready > limit;
        const page = rows.slice(0, Math.min(ready, limit));
        const last = page[page.length - 1];
        const position: FeedPosition = {
          pos: last ? last.pos : from.pos,
          reachedAt: last ? last.recordedAt : from.reachedAt,
          initialSyncStartedAt: hasMore ? from.initialSyncStartedAt : null,
        };
        const next = encodeFeedCursor(cursors, team, position);
        const body = `{"object":"list","data":[${page.map(feedItemJson).join(',')}],"has_more":${hasMore},"next_cursor":"${next}"}`;
        return { json: body, items: page.length };
      });
      return reply.header('content-type', JSON_TYPE).send(json);
    },
  );
}
