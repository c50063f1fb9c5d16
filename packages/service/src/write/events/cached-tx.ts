// One file: a single class whose cached reads and deferred writes keep the same maps consistent together.
import type { FeedKind, RecordKind, RemovalReason } from '../../schemas/enums.js';
import type {
  Entity,
  EntityKind,
  FeedEntry,
  FeedRow,
  RecordRemoval,
  RecordRow,
  StoredRecord,
  WriteSet,
  WriteTx,
} from '../../store/store.js';
import { appendTo, type By, entityKey, type Key, listKey, listKeysOf, unique } from './cache-keys.js';
import { copyEntity } from './entity-copy.js';

// A read-through cache over one write transaction. An event reads the same lead, board list or
// message list many times (and a batch of events many more), and each store read costs a query and
// a JSON parse. The cache only ever holds what the transaction itself would read back; it dies with
// the transaction, so a rollback leaves nothing behind. Callers mutate what they read, so entities are
// copied in and out.
//
// With `deferWrites` (the `Crm`, which calls `flush` before it commits) nothing is written until the
// end: entity and record rows once per transaction however often they change, removals, feed purges
// and feed entries, all handed to the store at once (`WriteTx.applyWrites`), which writes each table
// with a few statements. Feed positions are counted on from each team's head, read and locked once
// per transaction (`lockFeedHead`), so an entry's position is known when it is appended and the
// transaction still commits in feed order. Reads are answered from what is pending; only a list
// query that a pending entity whose place in the store's order is unknown now matches (one moved to
// another team or parent, or written without a read) writes the pending entities first.

/** What `publish` needs to know about a stored record, without its keyset position. */
export interface RecordMemo {
  version: number;
  json: string | null;
  removed: RemovalReason | null;
  /** The `updated_at` of `json`, when this transaction wrote it (else read from `json`). */
  updatedAt: string | null;
  /** The row as the store returned it (absent once this transaction rewrote the record). */
  stored?: StoredRecord;
}

/** What `prefetch` reads: entities and records by kind and id. */
export type PrefetchKeys = { entities: Key<EntityKind>[]; records: Key<RecordKind>[] };

export interface CachedTxOptions {
  /** Hold every write until `flush` (the `Crm`, which flushes before it commits); else write through. */
  deferWrites?: boolean;
}

export class CachedTx implements WriteTx {
  /** Entity by kind and id; null when the store has none. */
  private readonly entities = new Map<string, Entity<unknown> | null>();
  /** Ids of a `findEntities` answer, in the store's order; every id listed has its entity cached. */
  private readonly lists = new Map<string, string[]>();
  /** Kinds with a cached list: a write of any other kind has no list to keep up to date. */
  private readonly listedKinds = new Set<EntityKind>();
  private readonly records = new Map<string, RecordMemo | null>();
  private readonly generations = new Map<EntityKind, number>();
  /** Entities to write, in first-write order. */
  private readonly pendingEntities = new Map<string, Entity<unknown>>();
  /** Entities to delete (before the pending writes). */
  private readonly pendingDeletes = new Map<string, { kind: EntityKind; id: string }>();
  /** Pending entities the store does not have yet: a list query appends them after the store's rows. */
  private readonly newEntities = new Set<string>();
  /**
   * Keys of `newEntities` in the order they became new, by kind and by kind and parent, so a list query
   * looks at the new entities it could match, not at every pending one. A key deleted since stays listed
   * (`newEntities` no longer has it); a new entity moved since is unplaced (see `unplaced`).
   */
  private readonly newOfKind = new Map<string, string[]>();
  private readonly newOfParent = new Map<string, string[]>();
  /** Ids of `newEntities`: no stored row names one of them as its parent (a parent must exist first). */
  private readonly newIds = new Set<string>();
  /**
   * Keys of pending entities, by kind, whose place in a list the store cannot tell: moved to another team
   * or parent, written without a read, or deleted and written again. A list query that one of them now
   * matches writes the pending entities first; any other list query needs no write (`viewEntities`).
   */
  private readonly unplacedKeys = new Map<EntityKind, Set<string>>();
  private readonly pendingRecords = new Map<string, RecordRow>();
  /** Pending records that replace a stored row (read from the store as live, not written since). */
  private readonly pendingSupersede = new Map<string, { kind: RecordKind; id: string }>();
  private readonly pendingRemovals = new Map<string, RecordRemoval>();
  private readonly pendingPurges = new Map<string, { kind: FeedKind; id: string }>();
  private pendingFeed: FeedRow[] = [];
  /** Pending feed entries by record, so a purge finds its entries without a scan of every pending one. */
  private readonly pendingFeedOf = new Map<string, FeedRow[]>();
  /** Pending feed entries purged since: dropped from `pendingFeed` in one pass when it is next read. */
  private readonly purgedFeed = new Set<FeedRow>();
  /** The last position handed out per team (from its head, locked once per transaction). */
  private readonly heads = new Map<string, number>();

  private readonly deferWrites: boolean;

  constructor(
    readonly inner: WriteTx,
    options: CachedTxOptions = {},
  ) {
    this.deferWrites = options.deferWrites ?? false;
  }

  /** The intake's tables are not cached: they are read and written once per batch. */
  get intake(): WriteTx['intake'] {
    return this.inner.intake;
  }

  /** Writes everything pending; the transaction must not commit before. */
  async flush(): Promise<void> {
    const writes: WriteSet = {
      ...this.takeEntities(),
      ...this.takeRecords(),
      purgeFeed: [...this.pendingPurges.values()],
      appendFeed: this.liveFeed(),
    };
    this.pendingPurges.clear();
    this.pendingFeed = [];
    this.pendingFeedOf.clear();
    await this.apply(writes);
  }

  /** Moves on every write of an entity of this kind, so derived lookups (a team's stages) know to rebuild. */
  generation(kind: EntityKind): number {
    return this.generations.get(kind) ?? 0;
  }

  async getEntity<S>(kind: EntityKind, id: string): Promise<Entity<S> | undefined> {
    const entity = await this.viewEntity(kind, id);
    return entity ? copyEntity<S>(entity) : undefined;
  }

  async findEntities<S>(kind: EntityKind, by: By): Promise<Entity<S>[]> {
    return (await this.viewEntities<S>(kind, by)).map((e) => copyEntity<S>(e));
  }

  /**
   * The entity as cached, not a copy: for callers that only read it (projections), which must not
   * change it (what they read is what the transaction wrote last, shared with later reads).
   */
  async viewEntity<S>(kind: EntityKind, id: string): Promise<Entity<S> | undefined> {
    const key = entityKey(kind, id);
    let entity = this.entities.get(key);
    if (entity === undefined) {
      entity = (await this.inner.getEntity(kind, id)) ?? null;
      this.entities.set(key, entity);
    }
    return (entity ?? undefined) as Entity<S> | undefined;
  }

  /** `findEntities` without the copies, for callers that only read (see `viewEntity`). */
  async viewEntities<S>(kind: EntityKind, by: By): Promise<Entity<S>[]> {
    const key = listKey(kind, by);
    let ids = this.lists.get(key);
    if (!ids && by.parent !== undefined && this.newIds.has(by.parent) && !this.unplaced(kind, by)) {
      // The parent is new in this transaction: only entities written here can name it.
      ids = this.pendingNew(kind, by, new Set());
      this.lists.set(key, ids);
      this.listedKinds.add(kind);
    }
    if (!ids) {
      if (this.unplaced(kind, by)) await this.flushEntities();
      const found = await this.inner.findEntities(kind, by);
      ids = [];
      const listed = new Set<string>();
      for (const entity of found) {
        const k = entityKey(kind, entity.id);
        const cached = this.entities.get(k);
        // Null: deleted by this transaction (the deletion is pending). A cached entity is what this
        // transaction wrote last: one that no longer matches was moved away (the move is pending).
        if (cached === null) continue;
        if (cached === undefined) this.entities.set(k, entity);
        else if (!matches(cached, by)) continue;
        ids.push(entity.id);
        listed.add(k);
      }
      ids.push(...this.pendingNew(kind, by, listed));
      this.lists.set(key, ids);
      this.listedKinds.add(kind);
    }
    return ids.map((id) => this.entities.get(entityKey(kind, id)) as Entity<S>);
  }

  private unplace(kind: EntityKind, key: string): void {
    const keys = this.unplacedKeys.get(kind);
    if (keys) keys.add(key);
    else this.unplacedKeys.set(kind, new Set([key]));
  }

  /** Whether a pending entity of this kind whose place the store cannot tell now matches a list query `by`. */
  private unplaced(kind: EntityKind, by: By): boolean {
    for (const key of this.unplacedKeys.get(kind) ?? []) {
      const entity = this.entities.get(key);
      if (entity && matches(entity, by)) return true;
    }
    return false;
  }

  /** Ids of the pending new entities of a kind that a list query `by` matches, in first-write order. */
  private pendingNew(kind: EntityKind, by: By, listed: ReadonlySet<string>): string[] {
    const ids: string[] = [];
    const candidates =
      by.parent === undefined ? this.newOfKind.get(kind) : this.newOfParent.get(listKey(kind, { parent: by.parent }));
    for (const k of candidates ?? []) {
      const entity = this.pendingEntities.get(k);
      if (!entity || listed.has(k) || !this.newEntities.has(k)) continue;
      if (by.team !== undefined && entity.team !== by.team) continue;
      if (by.parent !== undefined && entity.parent !== by.parent) continue;
      ids.push(entity.id);
    }
    return ids;
  }

  /**
   * Tells the cache that no entity and no record of this kind and id exists, without asking the store:
   * for ids derived from state this transaction holds (an activity's id comes from its lead's counter).
   */
  created(kind: EntityKind & RecordKind, id: string): void {
    const key = entityKey(kind, id);
    if (!this.entities.has(key)) this.entities.set(key, null);
    if (!this.records.has(key)) this.records.set(key, null);
  }

  /**
   * Reads the given entities and records in one go when the store can (`WriteTx.getMany`), so the
   * events of a batch find most of what they read already cached. Keys cached already are skipped.
   * Given as a function, the keys are only worked out for a store that reads them so (not SQLite).
   */
  async prefetch(given: PrefetchKeys | (() => PrefetchKeys)): Promise<void> {
    if (!this.inner.getMany) return;
    const keys = typeof given === 'function' ? given() : given;
    const entities = unique(keys.entities.filter((k) => !this.entities.has(entityKey(k.kind, k.id))));
    const records = unique(keys.records.filter((k) => !this.records.has(entityKey(k.kind, k.id))));
    if (entities.length + records.length === 0) return;
    await this.flush();
    const found = await this.inner.getMany({ entities, records });
    for (const k of entities) this.entities.set(entityKey(k.kind, k.id), null);
    for (const e of found.entities) this.entities.set(entityKey(e.kind, e.id), e);
    for (const k of records) this.records.set(entityKey(k.kind, k.id), null);
    for (const r of found.records) {
      const memo = { version: r.version, json: r.json, removed: r.removed, updatedAt: null, stored: r };
      this.records.set(entityKey(r.kind, r.id), memo);
    }
  }

  async putEntity<S>(entity: Entity<S>): Promise<void> {
    const key = entityKey(entity.kind, entity.id);
    const before = this.entities.get(key);
    const after = copyEntity<unknown>(entity);
    if (this.deferWrites) {
      if (this.pendingDeletes.has(key)) {
        // Deleted and written again: the store gets a new row, last in insertion order.
        this.pendingEntities.delete(key);
        this.unplace(entity.kind, key);
      } else if (before === null) {
        this.newEntities.add(key);
        appendTo(this.newOfKind, entity.kind, key);
        if (after.parent !== null) appendTo(this.newOfParent, listKey(entity.kind, { parent: after.parent }), key);
        this.newIds.add(entity.id);
      } else if (before === undefined || before.team !== after.team || before.parent !== after.parent) {
        this.unplace(entity.kind, key);
      }
      this.pendingEntities.set(key, after);
    } else {
      await this.inner.putEntity(entity);
    }
    this.entities.set(key, after);
    this.bump(entity.kind);
    if (!this.listedKinds.has(entity.kind)) return;
    const afterKeys = listKeysOf(entity.kind, after.team, after.parent);
    if (before) {
      for (const k of listKeysOf(entity.kind, before.team, before.parent)) {
        if (!afterKeys.includes(k)) this.dropFromList(k, entity.id);
      }
    }
    for (const k of afterKeys) {
      const ids = this.lists.get(k);
      if (!ids || (before && ids.includes(entity.id))) continue;
      // A new row comes last in insertion order; an existing one moving in keeps its place, unknown here.
      if (before === null) ids.push(entity.id);
      else this.lists.delete(k);
    }
  }

  async deleteEntity(kind: EntityKind, id: string): Promise<void> {
    const key = entityKey(kind, id);
    if (this.deferWrites) {
      this.pendingEntities.delete(key);
      this.newEntities.delete(key);
      this.newIds.delete(id);
      this.pendingDeletes.set(key, { kind, id });
    } else {
      await this.inner.deleteEntity(kind, id);
    }
    const before = this.entities.get(key);
    this.entities.set(key, null);
    this.bump(kind);
    if (before && this.listedKinds.has(kind))
      for (const k of listKeysOf(kind, before.team, before.parent)) this.dropFromList(k, id);
  }

  async getRecord(kind: RecordKind, id: string): Promise<StoredRecord | undefined> {
    const memo = this.records.get(entityKey(kind, id));
    if (memo === null) return undefined;
    if (memo?.stored) return { ...memo.stored };
    // Written by this transaction: its keyset position exists once it is written.
    if (memo) await this.apply({ ...NO_WRITES, ...this.takeRecords() });
    return this.load(kind, id).then((m) => (m?.stored ? { ...m.stored } : undefined));
  }

  /** The record's current version, JSON and removal, from the cache when this transaction already knows it. */
  async current(kind: RecordKind, id: string): Promise<RecordMemo | undefined> {
    const memo = this.records.get(entityKey(kind, id));
    if (memo !== undefined) return memo ?? undefined;
    return this.load(kind, id);
  }

  async putRecord(row: RecordRow): Promise<void> {
    const key = entityKey(row.kind, row.id);
    if (this.deferWrites) {
      this.pendingRemovals.delete(key);
      // Read as stored and live, or never read: the stored row may be lent to a feed entry.
      const memo = this.records.get(key);
      if (memo === undefined || memo?.stored) this.pendingSupersede.set(key, { kind: row.kind, id: row.id });
      this.pendingRecords.set(key, row);
    } else {
      await this.inner.putRecord(row);
    }
    this.records.set(key, {
      version: row.version,
      json: row.json,
      removed: null,
      updatedAt: row.updatedAt,
    });
  }

  async removeRecord(kind: RecordKind, id: string, reason: RemovalReason, version: number, at: string): Promise<void> {
    const key = entityKey(kind, id);
    // A pending row stays pending: it is written, then made a tombstone, in the same flush.
    if (this.deferWrites) this.pendingRemovals.set(key, { kind, id, reason, version, at });
    else await this.inner.removeRecord(kind, id, reason, version, at);
    this.records.set(key, { version, json: null, removed: reason, updatedAt: at });
  }

  async appendFeed(entry: FeedEntry): Promise<number> {
    if (!this.deferWrites) return this.inner.appendFeed(entry);
    const pos = (this.heads.get(entry.team) ?? (await this.inner.lockFeedHead(entry.team))) + 1;
    this.heads.set(entry.team, pos);
    // Spelled out: a spread of the callers' differently shaped entries took the slow generic path.
    const row: FeedRow = {
      team: entry.team,
      kind: entry.kind,
      id: entry.id,
      version: entry.version,
      recordedAt: entry.recordedAt,
      body: entry.body,
      removed: entry.removed,
      pos,
    };
    this.pendingFeed.push(row);
    const key = entityKey(entry.kind, entry.id);
    const rows = this.pendingFeedOf.get(key);
    if (rows) rows.push(row);
    else this.pendingFeedOf.set(key, [row]);
    return pos;
  }

  async purgeFeed(kind: FeedKind, id: string): Promise<void> {
    if (!this.deferWrites) return this.inner.purgeFeed(kind, id);
    // Entries this transaction appended are dropped here; the store deletes the older ones.
    const key = entityKey(kind, id);
    for (const row of this.pendingFeedOf.get(key) ?? []) this.purgedFeed.add(row);
    this.pendingFeedOf.delete(key);
    this.pendingPurges.set(key, { kind, id });
  }

  /**
   * Drops the pending record entries that a later pending entry of the same record supersedes, in the
   * teams `unread` names (the rule of the demo's feed compaction, applied before writing). Their positions
   * stay unused, as trimmed ones do.
   */
  async dropSupersededFeed(unread: (team: string) => Promise<boolean>): Promise<void> {
    const later = new Set<string>();
    const verdicts = new Map<string, boolean>();
    const kept: FeedRow[] = [];
    const pending = this.liveFeed();
    for (let i = pending.length - 1; i >= 0; i--) {
      const entry = pending[i] as FeedRow;
      const key = entityKey(entry.kind, entry.id);
      const superseded = later.has(key) && entry.removed === null;
      later.add(key);
      if (superseded) {
        let verdict = verdicts.get(entry.team);
        if (verdict === undefined) {
          verdict = await unread(entry.team);
          verdicts.set(entry.team, verdict);
        }
        // A later purge of a dropped entry finds nothing to drop: harmless.
        if (verdict) continue;
      }
      kept.push(entry);
    }
    this.pendingFeed = kept.reverse();
  }

  async lockFeedHead(team: string): Promise<number> {
    const head = this.heads.get(team) ?? (await this.inner.lockFeedHead(team));
    this.heads.set(team, head);
    return head;
  }

  async applyWrites(writes: WriteSet): Promise<void> {
    await this.flush();
    await this.inner.applyWrites(writes);
  }

  getMeta(key: string): Promise<string | undefined> {
    return this.inner.getMeta(key);
  }

  setMeta(key: string, value: string): Promise<void> {
    return this.inner.setMeta(key, value);
  }

  private async load(kind: RecordKind, id: string): Promise<RecordMemo | undefined> {
    const stored = await this.inner.getRecord(kind, id);
    const memo = stored
      ? { version: stored.version, json: stored.json, removed: stored.removed, updatedAt: null, stored }
      : null;
    this.records.set(entityKey(kind, id), memo);
    return memo ?? undefined;
  }

  private takeEntities(): Pick<WriteSet, 'deleteEntities' | 'putEntities'> {
    const taken = {
      deleteEntities: [...this.pendingDeletes.values()],
      putEntities: [...this.pendingEntities.values()],
    };
    this.pendingDeletes.clear();
    this.pendingEntities.clear();
    this.newEntities.clear();
    this.newOfKind.clear();
    this.newOfParent.clear();
    this.newIds.clear();
    this.unplacedKeys.clear();
    return taken;
  }

  private takeRecords(): Pick<WriteSet, 'putRecords' | 'supersede' | 'removeRecords'> {
    const taken = {
      putRecords: [...this.pendingRecords.values()],
      supersede: [...this.pendingSupersede.values()],
      removeRecords: [...this.pendingRemovals.values()],
    };
    this.pendingRecords.clear();
    this.pendingSupersede.clear();
    this.pendingRemovals.clear();
    return taken;
  }

  private async flushEntities(): Promise<void> {
    await this.apply({ ...NO_WRITES, ...this.takeEntities() });
  }

  private async apply(writes: WriteSet): Promise<void> {
    const empty =
      writes.deleteEntities.length +
        writes.putEntities.length +
        writes.putRecords.length +
        writes.removeRecords.length +
        writes.purgeFeed.length +
        writes.appendFeed.length ===
      0;
    if (!empty) await this.inner.applyWrites(writes);
  }

  /** The pending feed entries without the purged ones. */
  private liveFeed(): FeedRow[] {
    if (this.purgedFeed.size > 0) {
      this.pendingFeed = this.pendingFeed.filter((row) => !this.purgedFeed.has(row));
      this.purgedFeed.clear();
    }
    return this.pendingFeed;
  }

  private bump(kind: EntityKind): void {
    this.generations.set(kind, this.generation(kind) + 1);
  }

  private dropFromList(key: string, id: string): void {
    const ids = this.lists.get(key);
    const at = ids?.indexOf(id) ?? -1;
    if (ids && at >= 0) ids.splice(at, 1);
  }
}

/** Whether an entity belongs to the list a query `by` asks for. */
const matches = (entity: Entity<unknown>, by: By): boolean =>
  (by.team === undefined || entity.team === by.team) && (by.parent === undefined || entity.parent === by.parent);

const NO_WRITES: WriteSet = {
  deleteEntities: [],
  putEntities: [],
  putRecords: [],
  supersede: [],
  removeRecords: [],
  purgeFeed: [],
  appendFeed: [],
};
