import type { FeedKind, RecordKind, RemovalReason } from '../schemas/enums.js';

// The values that cross the storage boundary (store.ts): what the store keeps, the rows it returns and the
// queries it takes. Plain data, the same on every backend.

/** Internal state the write side keeps (never exported as is): one row per kind and id. */
export const ENTITY_KINDS = [
  'organization',
  'team',
  'member',
  'booking_service',
  'board',
  'lead',
  'submission',
  'activity',
  'call',
  'conversation',
  'message',
  /** A message erased by `message.erased`: its ids and time only, so a restore can erase it again. */
  'erased_message',
  'booking',
  'integration',
  'api_key',
  /** A named, scoped credential of the internal listener (write/commands/operator-token-state.ts). */
  'operator_token',
  /** A sign-in session of the console (write/commands/console-session-commands.ts). */
  'console_session',
] as const;
export type EntityKind = (typeof ENTITY_KINDS)[number];

export interface Entity<S = unknown> {
  kind: EntityKind;
  id: string;
  /** Owning team (null for organizations and integrations). */
  team: string | null;
  /** Generic parent link used for lookups: a call's lead, a merged lead's kept lead, a key's integration... */
  parent: string | null;
  state: S;
}

/** One exported record, serialized once when it is written so reads never rebuild its JSON. */
export interface RecordRow {
  kind: RecordKind;
  id: string;
  team: string;
  /** Filter columns: the lead a call/conversation/booking/activity/facet belongs to, and a lead's place. */
  lead: string | null;
  board: string | null;
  stage: string | null;
  status: string | null;
  /** Search columns of a lead: email trimmed and lower-cased, phone in E.164. */
  email: string | null;
  phone: string | null;
  version: number;
  updatedAt: string;
  json: string;
}

export interface StoredRecord {
  kind: RecordKind;
  id: string;
  team: string;
  /** Stable keyset position within its kind. */
  seq: number;
  version: number;
  /** Null once removed. */
  json: string | null;
  removed: RemovalReason | null;
}

/** A record removed with reason `erased`: ids only, no personal data (the restore procedure replays these). */
export interface ErasedRecord {
  kind: RecordKind;
  id: string;
  team: string;
  /** When the service recorded the erasure (ISO 8601). */
  erasedAt: string;
}

export interface PageRow {
  seq: number;
  json: string;
}

/**
 * One keyset page as bytes ready for a list envelope: the stored JSON of its records joined by commas,
 * as the database returned it (one value per page, no per-record JavaScript).
 */
export interface JsonPage {
  /** UTF-8 JSON of the page's records, comma-separated, in `seq` order (empty for an empty page). */
  items: Buffer;
  /** Records in `items`. */
  count: number;
  /** Whether a live record matching the same query follows the page. */
  hasMore: boolean;
  /** Keyset position and id of the page's last record (for the next cursor); null for an empty page. */
  last: { seq: number; id: string } | null;
}

/** One page of a team's feed as the database answers it (`Store.feedPage`). */
export interface FeedPageQuery {
  team: string;
  /** Entries after this position. */
  after: number;
  /** Items on a full page. */
  limit: number;
  /** Epoch ms: an entry recorded later is not ready yet, and the page stops before the first such entry. */
  cutoff: number;
}

/**
 * A feed page as bytes ready for the list envelope: its entries rendered as feed items and joined by
 * the database, with what the next cursor needs.
 */
export interface JsonFeedPage {
  /** UTF-8 JSON of the page's items, comma-separated, in feed order (empty for an empty page). */
  items: Buffer;
  /** Items in `items`. */
  count: number;
  /** Whether a ready entry follows the page. */
  hasMore: boolean;
  /** Position and recording time of the page's last entry; null for an empty page. */
  last: { pos: number; recordedAt: number } | null;
  /** The team's feed head as the statement saw it (the same snapshot as the page; 0 when it has none). */
  head: number;
}

/** A live lead as GET /v1/leads/{id} returns it: its JSON with both facets, and its team. */
export interface LeadDetailRow {
  team: string;
  /** JSON text: the lead's fields, then `attribution` and `response` (each the facet's JSON or null). */
  body: string;
}

export type ListFilter = { by: 'board' | 'stage' | 'status' | 'lead'; value: string };

export interface ListQuery {
  team: string;
  kind: RecordKind;
  filter?: ListFilter;
  /** Keyset: rows with `seq` greater than this (0 for the first page). */
  after: number;
  limit: number;
}

export interface SearchQuery {
  team: string;
  email?: string;
  phone?: string;
  after: number;
  limit: number;
}

export interface FeedEntry {
  team: string;
  kind: FeedKind;
  id: string;
  version: number;
  /** Epoch milliseconds when the service recorded the change. */
  recordedAt: number;
  /** The record's JSON for a record item; null for a removal. */
  body: string | null;
  removed: RemovalReason | null;
}

export interface FeedRow extends FeedEntry {
  /** Position in the team's feed: 1, 2, 3... in commit order. */
  pos: number;
}

/**
 * One operator action of `crm-export admin` (docs/auth.md, "Audit trail"). Ids and non-secret settings
 * only: never a key, a key digest, a secret or personal data.
 */
export interface AuditEntry {
  /** When the action finished (ISO 8601 UTC, milliseconds). */
  at: string;
  /** Who ran it: the operating-system user or `--actor`. */
  actor: string;
  /** Stable dotted name, e.g. `integration.revoke`. */
  action: string;
  /** The ids the action changed or was refused on (may be empty). */
  target: string[];
  /** `ok`, or the error code of the refusal. */
  outcome: string;
  /** Settings of the action (a plan, a grace period, counts...). */
  details: Record<string, unknown>;
}

/** Filters of `Store.listAudit`; every one optional except `limit`. */
export interface AuditQuery {
  /** Entries at or after this ISO 8601 UTC time. */
  since?: string;
  /** Entries before this ISO 8601 UTC time. */
  until?: string;
  /** This action, or every action under this dotted prefix (`integration` matches `integration.revoke`). */
  action?: string;
  actor?: string;
  /** Entries naming this id among their targets. */
  target?: string;
  /** The newest `limit` matching entries are returned. */
  limit: number;
}

/** A record that became a tombstone (see `WriteTx.removeRecord`). */
export interface RecordRemoval {
  kind: RecordKind;
  id: string;
  reason: RemovalReason;
  version: number;
  /** When the removal was recorded (ISO 8601). */
  at: string;
}

/**
 * Every write of one transaction, handed to the store at once so it can write each table with a few
 * statements instead of one per row. Applied in this order: entity deletions, entity upserts, record
 * upserts, record removals, feed purges, feed appends (and the heads they move). An appended entry of
 * the version its record row is written with stores no body of its own: reads take the row's JSON
 * (each version's JSON is stored once); when the row later moves to a newer version, the entry gets
 * its own copy first.
 */
export interface WriteSet {
  /** Entities to delete (also those deleted and then written again: they get a new insertion place). */
  deleteEntities: { kind: EntityKind; id: string }[];
  /** Entities to insert or replace, each once, in first-write order (the insertion order of new ones). */
  putEntities: Entity<unknown>[];
  /** Records to insert or replace, each once, in first-write order (the keyset order of new ones). */
  putRecords: RecordRow[];
  /** Those of `putRecords` whose stored row they replace: an entry borrowing that row gets a copy first. */
  supersede: { kind: RecordKind; id: string }[];
  /** Records to turn into tombstones (after the upserts, so a record written and removed ends removed). */
  removeRecords: RecordRemoval[];
  /** Records whose feed entries written before this transaction are deleted. */
  purgeFeed: { kind: FeedKind; id: string }[];
  /** Entries at positions counted on from `lockFeedHead`, ascending per team; each head moves to its team's last. */
  appendFeed: FeedRow[];
}

/** A connection pool's state at one moment. */
export interface PoolUsage {
  total: number;
  idle: number;
  waiting: number;
  max: number;
}
