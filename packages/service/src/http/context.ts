import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { Principal } from '../access/access-control.js';
import type { Clock } from '../clock.js';
import type { CursorCodec } from '../cursor-codec.js';
import { ApiError } from '../errors/catalogue.js';
import type { FeedReadAhead } from '../feed/feed-read-ahead.js';
import type { Limits } from '../limits.js';
import type { Store } from '../store/store.js';
import type { PageCache } from './page-cache.js';

/** What every handler gets. */
export interface HttpDeps {
  store: Store;
  clock: Clock;
  limits: Limits;
  cursors: CursorCodec;
  release: string;
  /** Finished pages of the paged lists, reused while the team's feed head stays put. */
  pages: PageCache;
  /** The next page of each feed walk, read while the consumer parses the one it got. */
  feedReadAhead: FeedReadAhead;
}

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** The authenticated principal; the access hook has set it for every endpoint that takes a key. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route without authentication asked for a principal');
  return request.principal;
}

const TEAM_ID = /^team_[0-9A-Za-z]+$/;

/**
 * The team a team-scoped request reads (spec, Shared parameters: Service-Team). A repeated header
 * arrives joined with ", " and so fails the pattern like any malformed value.
 */
export function headerTeam(request: FastifyRequest, principal: Principal): string {
  const raw = request.headers['service-team'];
  if (raw === undefined) {
    if (principal.teams.length === 1) return principal.teams[0] as string;
    if (principal.teams.length === 0) throw new ApiError('team_not_accessible');
    throw new ApiError('team_required');
  }
  if (typeof raw !== 'string' || !TEAM_ID.test(raw)) throw new ApiError('invalid_request', { param: 'Service-Team' });
  if (!principal.teams.includes(raw)) throw new ApiError('team_not_accessible');
  return raw;
}

/**
 * A handler's answer: the JSON text and how many items it returned, which the settlement keeps and counts
 * toward the quota (charge.ts); `headers` are sent after the content type.
 */
export interface Answer {
  json: string | Buffer;
  items: number;
  headers?: Readonly<Record<string, string>>;
}
