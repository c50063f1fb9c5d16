import type { FeedKind, RecordKind, RemovalReason } from '../schemas/enums.js';
import type { Entity, EntityKind, FeedEntry, RecordRow, StoredRecord, WriteTx } from '../store/store.js';

// A read-through cache over one write transaction. An event reads the same lead, board list or
// message list many times (and a batch of events many more), and each store read costs a query and
// a JSON parse. Every write goes to the store at once (write-through), so the cache only ever holds
// what the transaction itself would read back; it dies with the transaction, so a rollback leaves
// nothing behind. Callers mutate what they read, so entities are copied in and out.
//
// With `deferWrites` (the `Crm`, which calls `flush` before it commits) entity and record rows are
// written once per transaction instead of once per change: an event sequence rewrites the same lead
// and its records many times. Pending rows are written in the order they were first written (so
// insertion order and keyset positions come out as if written at once), before any store read that
// could see them and before a removal. Feed entries are never deferred.

type By = { team?: string; parent?: string };

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

/** A deep copy of a JSON value (entity state is plain JSON). */
function copy<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(copy) as T;
  const out: Record<string, unknown> = {};
  for (const key in value) out[key] = copy((value as Record<string, unknown>)[key]);
  return out as T;
}

const copyEntity = <S>(e: Entity<unknown>): Entity<S> => ({
  kind: e.kind,
  id: e.id,
  team: e.team,
  parent: e.parent,
  state: copy(e.state) as S,
});

const entityKey = (kind: string, id: string) => `${kind}\u0000${id}`;
const listKey = (kind: string, team: string | null | undefined, parent: string | null | undefined) =>
  `${kind}\u0000${team ?? '\u0001'}\u0000${parent ?? '\u0001'}`;

/** The cached lists an entity with this team and parent belongs to (`findEntities` matches non-null values only). */
function listKeysOf(kind: string, team: string | null, parent: string | null): string[] {
  const keys = [listKey(kind, undefined, undefined)];
  if (team !== null) keys.push(listKey(kind, team, undefined));
  if (parent !== null) keys.push(listKey(kind, undefined, parent));
  if (team !== null && parent !== null) keys.push(listKey(kind, team, parent));
  return keys;
}

export class CachedTx implements WriteTx {
  /** Entity by kind and id; null when the store has none. */
  private readonly entities = new Map<string, Entity<unknown> | null>();
  /** Ids of a `findEntities` answer, in the store's order; every id listed has its entity cached. */
  private readonly lists = new Map<string, string[]>();
  private readonly records = new Map<string, RecordMemo | null>();
  private readonly generations = new Map<EntityKind, number>();
  private readonly pendingEntities = new Map<string, Entity<unknown>>();
  private readonly pendingRecords = new Map<string, RecordRow>();

  constructor(
    readonly inner: WriteTx,
    private readonly deferWrites = false,
  ) {}

  /** Writes every pending row; the transaction must not commit before. */
  async flush(): Promise<void> {
    await this.flushEntities();
    await this.flushRecords();
  }

  /** Moves on every write of an entity of this kind, so derived lookups (a team's stages) know to rebuild. */
  generation(kind: EntityKind): number {
    return this.generations.get(kind) ?? 0;
  }

  async getEntity<S>(kind: EntityKind, id: string): Promise<Entity<S> | undefined> {
    const key = entityKey(kind, id);
    let entity = this.entities.get(key);
    if (entity === undefined) {
      entity = (await this.inner.getEntity(kind, id)) ?? null;
      this.entities.set(key, entity);
    }
    return entity ? copyEntity<S>(entity) : undefined;
  }

  async findEntities<S>(kind: EntityKind, by: By): Promise<Entity<S>[]> {
    const key = listKey(kind, by.team, by.parent);
    let ids = this.lists.get(key);
    if (!ids) {
      await this.flushEntities();
      const found = await this.inner.findEntities(kind, by);
      ids = [];
      for (const entity of found) {
        const k = entityKey(kind, entity.id);
        // A cached entity is what this transaction wrote last, the same as the store now holds.
        if (!this.entities.get(k)) this.entities.set(k, entity);
        ids.push(entity.id);
      }
      this.lists.set(key, ids);
    }
    return ids.map((id) => copyEntity<S>(this.entities.get(entityKey(kind, id)) as Entity<unknown>));
  }

  async putEntity<S>(entity: Entity<S>): Promise<void> {
    const key = entityKey(entity.kind, entity.id);
    const before = this.entities.get(key);
    const after = copyEntity<unknown>(entity);
    if (this.deferWrites) this.pendingEntities.set(key, after);
    else await this.inner.putEntity(entity);
    this.entities.set(key, after);
    this.bump(entity.kind);
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
    this.pendingEntities.delete(key);
    await this.inner.deleteEntity(kind, id);
    const before = this.entities.get(key);
    this.entities.set(key, null);
    this.bump(kind);
    if (before) for (const k of listKeysOf(kind, before.team, before.parent)) this.dropFromList(k, id);
  }

  async getRecord(kind: RecordKind, id: string): Promise<StoredRecord | undefined> {
    const memo = this.records.get(entityKey(kind, id));
    if (memo === null) return undefined;
    if (memo?.stored) return { ...memo.stored };
    await this.flushRecords();
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
    if (this.deferWrites) this.pendingRecords.set(key, row);
    else await this.inner.putRecord(row);
    this.records.set(key, {
      version: row.version,
      json: row.json,
      removed: null,
      updatedAt: row.updatedAt,
    });
  }

  async removeRecord(kind: RecordKind, id: string, reason: RemovalReason, version: number, at: string): Promise<void> {
    // The row may still be pending: a tombstone replaces a written row.
    await this.flushRecords();
    await this.inner.removeRecord(kind, id, reason, version, at);
    this.records.set(entityKey(kind, id), { version, json: null, removed: reason, updatedAt: at });
  }

  appendFeed(entry: FeedEntry): Promise<number> {
    return this.inner.appendFeed(entry);
  }

  purgeFeed(kind: FeedKind, id: string): Promise<void> {
    return this.inner.purgeFeed(kind, id);
  }

  trimSupersededFeed(team: string, after: number): Promise<number> {
    return this.inner.trimSupersededFeed(team, after);
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

  private async flushEntities(): Promise<void> {
    for (const entity of this.pendingEntities.values()) await this.inner.putEntity(entity);
    this.pendingEntities.clear();
  }

  private async flushRecords(): Promise<void> {
    for (const row of this.pendingRecords.values()) await this.inner.putRecord(row);
    this.pendingRecords.clear();
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
