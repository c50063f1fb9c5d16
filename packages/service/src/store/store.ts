import type { FeedKind, RecordKind, RemovalReason } from '../schemas/enums.js';

// The storage boundary. Only store/ speaks SQL (store/sql/ what both backends share) and only
// store/<backend>/ imports a database driver; everything above works through these members, which are
// what the service calls. Every member is async so PostgreSQL can implement it as is.

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

/**
 * The set's feed entries as the store writes them: an entry of the version and JSON its record row is
 * written with in the same set (and not removed there) has its body dropped, since reads take the row's.
 */
export function borrowBodies(writes: WriteSet): FeedRow[] {
  const removed = new Set(writes.removeRecords.map((r) => `${r.kind}\u0000${r.id}`));
  const rows = new Map<string, RecordRow>();
  for (const r of writes.putRecords) rows.set(`${r.kind}\u0000${r.id}`, r);
  return writes.appendFeed.map((e) => {
    const key = `${e.kind}\u0000${e.id}`;
    const row = rows.get(key);
    const borrowed = e.body !== null && row?.version === e.version && row.json === e.body && !removed.has(key);
    return borrowed ? { ...e, body: null } : e;
  });
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
  /**
   * Reads many entities and records at once, locked as `getEntity` and `getRecord` lock them; absent
   * keys are simply not returned. Optional: a backend whose reads cost no round trip has no need of it.
   */
  getMany?(keys: {
    entities: { kind: EntityKind; id: string }[];
    records: { kind: RecordKind; id: string }[];
  }): Promise<{ entities: Entity<unknown>[]; records: StoredRecord[] }>;
  /** Locks the team's feed head for the rest of the transaction and returns its position (0 when empty). */
  lockFeedHead(team: string): Promise<number>;
  /** Applies a transaction's buffered writes with a few statements per table (see `WriteSet`). */
  applyWrites(writes: WriteSet): Promise<void>;
  /** Reads a setting inside the transaction. */
  getMeta(key: string): Promise<string | undefined>;
  /** Writes a setting inside the transaction. */
  setMeta(key: string, value: string): Promise<void>;
}

/** Rows a retention batch deletes (removals) or examines (superseded entries) at most. */
export const TRIM_BATCH_ROWS = 1000;

/** One retention statement's work, reported to `TrimOptions.onBatch`. */
export interface TrimBatch {
  /** `removals`: expired removal entries; `superseded`: entries with a newer entry of the same record. */
  rule: 'removals' | 'superseded';
  /** Rows the batch looked at: for removals the rows it selected, for superseded entries its window. */
  examined: number;
  deleted: number;
}

export interface TrimOptions {
  /** Rows per batch (default `TRIM_BATCH_ROWS`). */
  batchSize?: number;
  /** Called after each batch (tests, logs). */
  onBatch?: (batch: TrimBatch) => void;
  /** Stops between batches once aborted (server shutdown); what was deleted stays deleted. */
  signal?: AbortSignal;
  /** Only this team's entries (the demo's compaction of feeds nobody has read); default every team. */
  team?: string;
}

/** A `trimFeed` cutoff later than every entry: superseded entries go whatever their age. */
export const ANY_AGE = Number.MAX_SAFE_INTEGER;

/** The database a command needs does not exist or has not been migrated (`crm-export migrate` creates it). */
export class DatabaseMissingError extends Error {
  override readonly name = 'DatabaseMissingError';
}

/** A connection pool's state at one moment. */
export interface PoolUsage {
  total: number;
  idle: number;
  waiting: number;
  max: number;
}

export interface Store {
  /** Which backend this is, for logs and test names. */
  readonly backend: 'sqlite' | 'postgres';
  /** Applies pending migrations; safe to run on every start and from several processes. */
  migrate(): Promise<void>;
  /** Names of the migrations this build has that the database has not applied (all of them: an empty database). */
  pendingMigrations(): Promise<string[]>;
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
  /** One keyset page of live records, joined into one value by the database in one statement. */
  listPage(query: ListQuery): Promise<JsonPage>;
  /** A live lead with both facets spliced in, read in one statement; undefined when absent or removed. */
  leadDetail(id: string): Promise<LeadDetailRow | undefined>;
  /** Live leads of a team matching the email or the phone, `seq` ascending. */
  searchLeads(query: SearchQuery): Promise<PageRow[]>;
  /** Up to `limit` feed rows of a team with `pos` greater than `after`, oldest first. */
  readFeed(team: string, after: number, limit: number): Promise<FeedRow[]>;
  /** One page of a team's feed, rendered and joined by the database in one statement (what the feed serves). */
  feedPage(query: FeedPageQuery): Promise<JsonFeedPage>;
  /** The newest position of a team's feed (0 when empty). */
  feedHead(team: string): Promise<number>;
  /**
   * Retention: drops removal entries recorded before `removalsBefore` (none when null) and record entries
   * superseded by a newer entry of the same record recorded before `supersededBefore` (epoch ms; `ANY_AGE`:
   * every superseded entry). Returns rows dropped. Works in bounded batches, each its own short
   * transaction, so other work runs between them (docs/feed.md).
   */
  trimFeed(removalsBefore: number | null, supersededBefore: number, options?: TrimOptions): Promise<number>;
  /** Every erased record (its tombstone), oldest erasure first. */
  erasedRecords(): Promise<ErasedRecord[]>;
  /** Reads a setting (operator switches, secrets, the feed epoch). */
  getMeta(key: string): Promise<string | undefined>;
  /** Appends one entry to the audit trail. */
  appendAudit(entry: AuditEntry): Promise<void>;
  /** The newest `query.limit` audit entries matching the filters, oldest first. */
  listAudit(query: AuditQuery): Promise<AuditEntry[]>;
  /** Checks the database answers (health, readiness). */
  ping(): Promise<void>;
  /** When the newest entry of each team's feed was recorded (epoch ms), for the feed lag metric. */
  feedHeadTimes(): Promise<{ team: string; recordedAt: number }[]>;
  /** Connection pool counts (PostgreSQL only). */
  poolUsage?(): PoolUsage;
  /**
   * Rewrites the tables compactly, giving the space of deleted and superseded rows back (SQLite `VACUUM`,
   * the WAL truncated after it; PostgreSQL `VACUUM FULL`). Locks the whole database while it runs, so only
   * for a database nothing serves yet: after the demo of a new one.
   */
  reclaimSpace?(): Promise<void>;
  /** Closes connections. */
  close(): Promise<void>;
}
