// The client's record types: generated from the service's OpenAPI document, plus the open shapes the
// spec asks a consumer to tolerate (unknown feed kinds).
import type {
  Activity,
  Board,
  Booking,
  BookingService,
  Call,
  Conversation,
  Health,
  Integration,
  FeedItem as KnownFeedItem,
  Lead,
  LeadAttribution,
  LeadDetail,
  LeadResponse,
  Member,
  Problem,
  Stage,
  Team,
} from '../generated/api-types.js';

export type {
  Activity,
  Board,
  Booking,
  BookingService,
  Call,
  Conversation,
  Health,
  Integration,
  Lead,
  LeadAttribution,
  LeadDetail,
  LeadResponse,
  Member,
  Problem,
  Stage,
  Team,
};

/** The feed kinds that exist today; new kinds can appear in any version. */
export const KNOWN_FEED_KINDS = [
  'lead',
  'lead_attribution',
  'lead_response',
  'activity',
  'call',
  'conversation',
  'booking',
  'board',
] as const;
export type KnownFeedKind = (typeof KNOWN_FEED_KINDS)[number];

/** A feed item of a kind this client does not know yet: stored or skipped, never fatal. */
export interface UnknownFeedItem {
  kind: string;
  id: string;
  version: number;
  object?: object;
  removed?: { reason: string };
}

export type FeedItem = KnownFeedItem | UnknownFeedItem;

export interface ListPage<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface FeedPage {
  object: 'list';
  data: FeedItem[];
  has_more: boolean;
  next_cursor: string;
}

export function isKnownFeedKind(kind: string): kind is KnownFeedKind {
  return (KNOWN_FEED_KINDS as readonly string[]).includes(kind);
}
