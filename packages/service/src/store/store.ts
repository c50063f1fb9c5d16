import type { FeedKind, RecordKind, RemovalReason } from '../schemas/enums.js';

// The storage boundary. Only store/<backend>/ speaks SQL or imports a database driver; everything
// above works through these members. Every member is async so PostgreSQL can implement it as is.

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
  'booking',
  'integration',
  'api_key',
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

export interface PageRow {
  seq: number;
  json: string;
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

/** What a write transaction can do. Obtained only through `Store.write`. */
export interface WriteTx {
  /** Reads one entity, or undefined. */
  getEntity<S>(kind: EntityKind, id: string): Promise<Entity<S> | undefined>;
  /** Entities of a kind by team and/or parent, in insertion order. */
  findEntities<S>(kind: EntityKind, by: { team?: string; parent?: string }): Promise<Entity<S>[]>;
  /** Inserts or replaces an entity. */
  putEntity<S>(entity: Entity<S>): Promise<void>;
  /** Deletes an entity (no-op when absent). */
  deleteEntity(kind: EntityKind, id: string): Promise<void>;
  /** Reads a record, removed ones included (as tombstones). */
  getRecord(kind: RecordKind, id: string): Promise<StoredRecord | undefined>;
  /** Inserts or replaces a record; a replaced record keeps its keyset position. */
  putRecord(row: RecordRow): Promise<void>;
  /** Turns a record into a tombstone: its JSON and personal columns are dropped. */
  removeRecord(kind: RecordKind, id: string, reason: RemovalReason, version: number, at: string): Promise<void>;
  /** Appends to the team's feed; positions are per team and follow commit order. Returns the position. */
  appendFeed(entry: FeedEntry): Promise<number>;
  /** Deletes every earlier feed entry of a record (personal data must not outlive a removal). */
  purgeFeed(kind: FeedKind, id: string): Promise<void>;
  /** Drops the team's record entries superseded by an entry after position `after`, whatever their age (docs/feed.md, demo data). */
  trimSupersededFeed(team: string, after: number): Promise<number>;
  /** Reads a setting inside the transaction. */
  getMeta(key: string): Promise<string | undefined>;
  /** Writes a setting inside the transaction. */
  setMeta(key: string, value: string): Promise<void>;
}

export interface Store {
  /** Which backend this is, for logs and test names. */
  readonly backend: 'sqlite' | 'postgres';
  /** Applies pending migrations; safe to run on every start and from several processes. */
  migrate(): Promise<void>;
  /** Runs `fn` in one transaction: all of it is applied or none. Writers to one team are serialized. */
  write<T>(fn: (tx: WriteTx) => Promise<T>): Promise<T>;
  /** Reads one entity outside a transaction. */
  getEntity<S>(kind: EntityKind, id: string): Promise<Entity<S> | undefined>;
  /** Entities of a kind by team and/or parent, in insertion order. */
  findEntities<S>(kind: EntityKind, by: { team?: string; parent?: string }): Promise<Entity<S>[]>;
  /** One record, removed ones included. */
  getRecord(kind: RecordKind, id: string): Promise<StoredRecord | undefined>;
  /** The live records of the given ids (any order). */
  getRecords(kind: RecordKind, ids: readonly string[]): Promise<StoredRecord[]>;
  /** One keyset page of live records, `seq` ascending. */
  listRecords(query: ListQuery): Promise<PageRow[]>;
  /** Live leads of a team matching the email or the phone, `seq` ascending. */
  searchLeads(query: SearchQuery): Promise<PageRow[]>;
  /** Up to `limit` feed rows of a team with `pos` greater than `after`, oldest first. */
  readFeed(team: string, after: number, limit: number): Promise<FeedRow[]>;
  /** The newest position of a team's feed (0 when empty). */
  feedHead(team: string): Promise<number>;
  /**
   * Retention: drops removal entries recorded before `removalsBefore` and record entries superseded
   * by a newer entry of the same record recorded before `supersededBefore` (epoch ms). Returns rows dropped.
   */
  trimFeed(removalsBefore: number, supersededBefore: number): Promise<number>;
  /** Reads a setting (operator switches, secrets, the feed epoch). */
  getMeta(key: string): Promise<string | undefined>;
  /** Writes a setting. */
  setMeta(key: string, value: string): Promise<void>;
  /** Checks the database answers (health, readiness). */
  ping(): Promise<void>;
  /** Closes connections. */
  close(): Promise<void>;
}
