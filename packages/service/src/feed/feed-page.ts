import type { AccessControl, Principal } from '../access/access-control.js';
import { teamFeedEpoch } from '../access/sandbox.js';
import type { Clock } from '../clock.js';
import type { CursorCodec } from '../cursor-codec.js';
import { ApiError } from '../errors/catalogue.js';
import type { Limits } from '../limits.js';
import { listBytes } from '../list-envelope.js';
import type { Store } from '../store/store.js';
import { parseSandboxTeam, sandboxTeamKey } from '../write/commands/meta-state.js';
import { assertCaptured } from './capture.js';
import { decodeFeedCursor, encodeFeedCursor, type FeedPosition } from './feed-cursor.js';
import { currentFeedEpoch } from './feed-epoch.js';
import type { FeedReadAhead } from './feed-read-ahead.js';

// One page of a team's changes feed, independent of Fastify (docs/feed.md). Every check runs before
// anything is read, so a failed request never yields a cursor; the database renders the page's items
// from the stored JSON of each entry and joins them (Store.feedPage), never re-serialized, so a retried
// cursor gets the same bytes.

export interface FeedDeps {
  store: Store;
  clock: Clock;
  limits: Pick<Limits, 'feedHoldBackMs' | 'cursorLifetimeMs'> & Partial<Pick<Limits, 'removalRetentionMs'>>;
  codec: CursorCodec;
  /** Refused teams (403) and teams the key does not read (404) never reach the feed. */
  access: Pick<AccessControl, 'checkTeam'>;
  /** Reads the next page of a walk while the consumer parses this one; without it each page is read when asked. */
  readAhead?: FeedReadAhead;
}

export interface FeedRequest {
  principal: Principal;
  team: string;
  /** The `next_cursor` of an earlier page; omitted to start an initial sync. */
  cursor?: string | undefined;
  /** 1 to 100 (validated by the route). */
  limit: number;
}

export interface FeedAnswer {
  /** The page, UTF-8 JSON. */
  json: Buffer;
  /** Items on the page (for the quota). */
  items: number;
}

/** A feed request that passed every check; `read` produces the page. */
export interface OpenFeed {
  from: FeedPosition;
  read(): Promise<FeedAnswer>;
}

/**
 * The checks that follow the team's own (refusals, then capture, which the caller has run): the cursor
 * (400 invalid_request for another team or an altered one), the epoch and the feed's end (409
 * resync_required), then the cursor's age (410 sync_cursor_expired).
 */
export async function openFeed(deps: Omit<FeedDeps, 'access'>, request: FeedRequest): Promise<OpenFeed> {
  const { store, clock, limits, codec, readAhead } = deps;
  const { team, limit } = request;
  const now = clock.now();
  // What the checks read, sent together (on PostgreSQL each is a round trip); the checks below still run in
  // their order. An example team's cursors also carry its sandbox token (docs/testing-your-consumer.md); read
  // at every request, never cached, so a cursor issued after a sandbox change always carries the new token.
  // The head (cursor requests) is read after the request arrived: a page read ahead must have seen the same.
  const [databaseEpoch, sandboxMeta, head] = await Promise.all([
    currentFeedEpoch(store),
    request.principal.livemode ? undefined : store.getMeta(sandboxTeamKey(team)),
    request.cursor === undefined ? undefined : store.feedHead(team),
  ]);
  const sandbox = request.principal.livemode ? undefined : parseSandboxTeam(sandboxMeta);
  const epoch = teamFeedEpoch(databaseEpoch, sandbox);
  let from: FeedPosition;
  if (request.cursor === undefined) {
    from = { epoch, pos: 0, reachedAt: now - limits.feedHoldBackMs, initialSyncStartedAt: now };
  } else {
    from = decodeFeedCursor(codec, team, request.cursor);
    if (from.epoch !== epoch) {
      // Issued before a restore was marked: what follows it may be lower versions.
      if (from.epoch.split('-')[0] !== databaseEpoch || !sandbox?.cursors) throw new ApiError('resync_required');
      // Issued before a sandbox cursor change of the team: the refusal the operator chose.
      throw new ApiError(sandbox.cursors.refusal);
    }
    // Beyond the feed's end: the database went back in time (a restore nobody marked).
    if (from.pos > (head ?? 0)) throw new ApiError('resync_required');
    const since = from.initialSyncStartedAt ?? from.reachedAt;
    if (now - since > limits.cursorLifetimeMs) throw new ApiError('sync_cursor_expired');
    // Only when configured with a lifetime longer than removal retention: removals after the cursor
    // may have been trimmed, a gap the consumer cannot see.
    if (limits.removalRetentionMs !== undefined && now - since > limits.removalRetentionMs) {
      throw new ApiError('resync_required');
    }
  }
  return {
    from,
    read: async () => {
      // The page stops at the first entry recorded inside the hold-back window: what follows is not ready yet.
      const cutoff = now - limits.feedHoldBackMs;
      const query = { team, after: from.pos, limit, cutoff };
      const page = await (readAhead ? readAhead.page(query, head) : store.feedPage(query));
      const { hasMore, last } = page;
      // Caught up: everything recorded up to the cutoff was delivered, so an empty page moves the point too.
      const reachedAt = hasMore && last ? Math.max(from.reachedAt, last.recordedAt) : Math.max(from.reachedAt, cutoff);
      const next = encodeFeedCursor(codec, team, {
        epoch,
        pos: last ? last.pos : from.pos,
        reachedAt,
        initialSyncStartedAt: hasMore ? from.initialSyncStartedAt : null,
      });
      if (hasMore && last) readAhead?.readNext({ team, after: last.pos, limit }, limits.feedHoldBackMs);
      return { json: listBytes(page, next), items: page.count };
    },
  };
}

/**
 * Every check in the spec's order, the team (403/404) and capture (409 capture_not_ready) first, then
 * the page, in one call (tests, the benchmark). The route's pipeline checks the team itself, reserves
 * its quota, and calls `openFeed`.
 */
export async function feedPage(deps: FeedDeps, request: FeedRequest): Promise<FeedAnswer> {
  await deps.access.checkTeam(request.principal, request.team);
  await assertCaptured(deps.store, request.team);
  return (await openFeed(deps, request)).read();
}
