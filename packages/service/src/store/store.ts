import type { FeedKind, RecordKind, RemovalReason } from '../schemas/enums.js';
import type { IdempotencyClaim, IdempotencyRow } from './idempotency-types.js';
import type {
  IntakeIdRow,
  IntakeSourceRow,
  QuarantineFilter,
  QuarantineRow,
  QuarantineSummary,
} from './intake-types.js';
import type { TrimOptions } from './trim-options.js';
import type {
  AuditEntry,
  AuditQuery,
  Entity,
  EntityKind,
  ErasedRecord,
  FeedEntry,
  FeedPageQuery,
  FeedRow,
  JsonFeedPage,
  JsonPage,
  LeadDetailRow,
  ListQuery,
  PageRow,
  PoolUsage,
  RecordRow,
  SearchQuery,
  StoredRecord,
  WriteSet,
} from './types.js';
import type {
  LastUse,
  LastUseKind,
  RequestLogQuery,
  StoredRequestLogRow,
  UsageBatch,
  UsageCount,
  UsageCountQuery,
  UsageTrim,
} from './usage-types.js';

// The storage boundary: the two interfaces everything above store/ works through, one line of doc per
// member. Only store/ speaks SQL (store/sql/ what both backends share) and only store/<backend>/ imports
// a database driver; store/open-store.ts alone picks a backend. An optional member is a capability that
// not every backend has: its caller checks for it. Every member is async so PostgreSQL can implement it
// as is. The values that cross the boundary are re-exported here, so a caller imports this file only.

export { DatabaseMissingError } from './database-missing-error.js';
export type { IdempotencyClaim, IdempotencyRow } from './idempotency-types.js';
export type {
  IntakeIdRow,
  IntakeSourceRow,
  QuarantineFilter,
  QuarantineRow,
  QuarantineSummary,
} from './intake-types.js';
export { ANY_AGE, TRIM_BATCH_ROWS, type TrimBatch, type TrimOptions } from './trim-options.js';
export {
  type AuditEntry,
  type AuditQuery,
  ENTITY_KINDS,
  type Entity,
  type EntityKind,
  type ErasedRecord,
  type FeedEntry,
  type FeedPageQuery,
  type FeedRow,
  type JsonFeedPage,
  type JsonPage,
  type LeadDetailRow,
  type ListFilter,
  type ListQuery,
  type PageRow,
  type PoolUsage,
  type RecordRemoval,
  type RecordRow,
  type SearchQuery,
  type StoredRecord,
  type WriteSet,
} from './types.js';
export type {
  LastUse,
  LastUseKind,
  RequestLogQuery,
  RequestLogRow,
  StoredRequestLogRow,
  UsageBatch,
  UsageCount,
  UsageCountQuery,
  UsageTrim,
} from './usage-types.js';

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
  /** Reads many entities and records at once, locked as one by one; absent keys are left out (saves round trips). */
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
  /** The intake's tables (sources, applied ids, quarantine) inside this transaction. */
  readonly intake: IntakeWriteTx;
}

/** What the intake reads and writes inside a write transaction (store/intake-types.ts). */
export interface IntakeWriteTx {
  /**
   * The source's row, locked until the transaction ends (created at `last_seq` 0 when new): batches of one
   * source never interleave, whichever process or host runs them.
   */
  lockSource(source: string, now: number): Promise<IntakeSourceRow>;
  /** Writes the source's position and counters (the row is locked). */
  putSource(row: IntakeSourceRow): Promise<void>;
  /** The applied ids among `ids` of a source. */
  appliedIds(source: string, ids: readonly string[]): Promise<IntakeIdRow[]>;
  /** Records applied ids (new ones; an id is recorded once). */
  putAppliedIds(rows: readonly IntakeIdRow[]): Promise<void>;
  /** Quarantined events matching the filter, by source then seq. */
  quarantine(filter: QuarantineFilter): Promise<QuarantineRow[]>;
  /** The lanes of a source that hold quarantined events. */
  blockedLanes(source: string): Promise<string[]>;
  /** Inserts quarantined events, or replaces them (same source and seq). */
  putQuarantine(rows: readonly QuarantineRow[]): Promise<void>;
  /** Removes quarantined events by source and seq. */
  deleteQuarantine(keys: readonly { source: string; seq: number }[]): Promise<void>;
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
  /** Retention: drops expired removals and superseded entries in short batches (trim-options.ts); rows dropped. */
  trimFeed(removalsBefore: number | null, supersededBefore: number, options?: TrimOptions): Promise<number>;
  /** Every erased record (its tombstone), oldest erasure first. */
  erasedRecords(): Promise<ErasedRecord[]>;
  /** Reads a setting (operator switches, secrets, the feed epoch). */
  getMeta(key: string): Promise<string | undefined>;
  /** Appends one entry to the audit trail. */
  appendAudit(entry: AuditEntry): Promise<void>;
  /** The newest `query.limit` audit entries matching the filters, oldest first. */
  listAudit(query: AuditQuery): Promise<AuditEntry[]>;
  /** Writes one flush of a process's request log, usage counts and last uses (usage-types.ts). */
  appendUsage(batch: UsageBatch): Promise<void>;
  /** Retention of the request log (by age, then rows per integration) and of usage counts; rows dropped. */
  trimUsage(trim: UsageTrim): Promise<number>;
  /** A page of the request log matching the filters, newest first. */
  requestLog(query: RequestLogQuery): Promise<StoredRequestLogRow[]>;
  /** Usage counts since an hour, by hour. */
  usageCounts(query: UsageCountQuery): Promise<UsageCount[]>;
  /** The last uses of these ids of one kind (ids never used are left out). */
  lastUses(kind: LastUseKind, ids: readonly string[]): Promise<LastUse[]>;
  /** Every intake source, by name. */
  intakeSources(): Promise<IntakeSourceRow[]>;
  /** Quarantined events matching the filter, by source then seq. */
  intakeQuarantine(filter: QuarantineFilter): Promise<QuarantineRow[]>;
  /** Each source's quarantine size and oldest event. */
  quarantineSummary(): Promise<QuarantineSummary[]>;
  /** Retention: drops applied ids recorded before `before` (epoch ms) in short batches; rows dropped. */
  trimIntakeIds(before: number, options?: { batchSize?: number }): Promise<number>;
  /** Claims a management API idempotency key, or reads the row a request stored under it before. */
  claimIdempotency(
    row: Pick<IdempotencyRow, 'owner' | 'key' | 'digest' | 'createdAt'>,
    expiredBefore: number,
  ): Promise<IdempotencyClaim>;
  /** Stores the answer of the request that claimed an idempotency key. */
  finishIdempotency(row: Pick<IdempotencyRow, 'owner' | 'key' | 'digest' | 'status' | 'answer'>): Promise<void>;
  /** Forgets an idempotency key whose request gave no answer worth repeating. */
  releaseIdempotency(row: Pick<IdempotencyRow, 'owner' | 'key' | 'digest'>): Promise<void>;
  /** Retention: idempotency keys stored before `before` (epoch ms); rows dropped. */
  trimIdempotency(before: number): Promise<number>;
  /** Checks the database answers (health, readiness). */
  ping(): Promise<void>;
  /** When the newest entry of each team's feed was recorded (epoch ms), for the feed lag metric. */
  feedHeadTimes(): Promise<{ team: string; recordedAt: number }[]>;
  /** Connection pool counts (PostgreSQL only). */
  poolUsage?(): PoolUsage;
  /** Rewrites the tables compactly, locking the whole database: only for one nothing serves yet (a new demo). */
  reclaimSpace?(): Promise<void>;
  /** Writes a consistent copy of the database to a new file while it serves (SQLite; PostgreSQL has pg_dump). */
  backup?(destination: string): Promise<void>;
  /** Closes connections. */
  close(): Promise<void>;
}
