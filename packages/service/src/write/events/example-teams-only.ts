import type { FeedKind, RecordKind, RemovalReason } from '../../schemas/enums.js';
import type { Entity, EntityKind, FeedEntry, RecordRow, StoredRecord, WriteSet, WriteTx } from '../../store/store.js';
import type { TeamState } from '../types.js';
import { WriteError } from './write-error.js';

// A sandbox switch goes through the write side, and an event's cascade can reach beyond the team it names
// (erasing an example lead unlinks the live original it was transferred from). This transaction refuses
// every write that is not an example team's before it reaches the store, whatever path led there.

/** A write outside example teams, refused: the transaction changed nothing. */
export class LiveTeamWriteError extends WriteError {
  override name = 'LiveTeamWriteError';

  constructor(
    readonly team: string | null,
    what: string,
  ) {
    super(`it would change ${what} of ${team === null ? 'no team' : `the live team ${team}`}`);
  }
}

/** `tx` with every write checked: each must belong to an existing example team (livemode false). */
export class ExampleTeamsOnlyTx implements WriteTx {
  private readonly livemode = new Map<string, boolean>();
  readonly getMany: WriteTx['getMany'];

  constructor(private readonly inner: WriteTx) {
    this.getMany = inner.getMany?.bind(inner);
  }

  get intake(): WriteTx['intake'] {
    return this.inner.intake;
  }

  getEntity<S>(kind: EntityKind, id: string): Promise<Entity<S> | undefined> {
    return this.inner.getEntity<S>(kind, id);
  }

  findEntities<S>(kind: EntityKind, by: { team?: string; parent?: string }): Promise<Entity<S>[]> {
    return this.inner.findEntities<S>(kind, by);
  }

  getRecord(kind: RecordKind, id: string): Promise<StoredRecord | undefined> {
    return this.inner.getRecord(kind, id);
  }

  lockFeedHead(team: string): Promise<number> {
    return this.inner.lockFeedHead(team);
  }

  getMeta(key: string): Promise<string | undefined> {
    return this.inner.getMeta(key);
  }

  async putEntity<S>(entity: Entity<S>): Promise<void> {
    await this.check(entity.team, `${entity.kind} ${entity.id}`);
    await this.inner.putEntity(entity);
  }

  async deleteEntity(kind: EntityKind, id: string): Promise<void> {
    await this.checkStoredEntity(kind, id);
    await this.inner.deleteEntity(kind, id);
  }

  async putRecord(row: RecordRow): Promise<void> {
    await this.check(row.team, `${row.kind} ${row.id}`);
    await this.inner.putRecord(row);
  }

  async removeRecord(kind: RecordKind, id: string, reason: RemovalReason, version: number, at: string): Promise<void> {
    await this.checkStoredRecord(kind, id);
    await this.inner.removeRecord(kind, id, reason, version, at);
  }

  async appendFeed(entry: FeedEntry): Promise<number> {
    await this.check(entry.team, `the feed entry of ${entry.kind} ${entry.id}`);
    return this.inner.appendFeed(entry);
  }

  async purgeFeed(kind: FeedKind, id: string): Promise<void> {
    await this.checkStoredRecord(kind, id);
    await this.inner.purgeFeed(kind, id);
  }

  async applyWrites(writes: WriteSet): Promise<void> {
    for (const e of writes.deleteEntities) await this.checkStoredEntity(e.kind, e.id);
    for (const e of writes.putEntities) await this.check(e.team, `${e.kind} ${e.id}`);
    for (const r of writes.putRecords) await this.check(r.team, `${r.kind} ${r.id}`);
    // A record written and removed in the same set is not stored yet: its team is the written row's.
    const written = new Map(writes.putRecords.map((r) => [`${r.kind}\u0000${r.id}`, r.team]));
    for (const r of [...writes.removeRecords, ...writes.purgeFeed]) {
      const team = written.get(`${r.kind}\u0000${r.id}`);
      if (team === undefined) await this.checkStoredRecord(r.kind, r.id);
      else await this.check(team, `${r.kind} ${r.id}`);
    }
    for (const f of writes.appendFeed) await this.check(f.team, `the feed entry of ${f.kind} ${f.id}`);
    await this.inner.applyWrites(writes);
  }

  async setMeta(key: string, _value: string): Promise<void> {
    throw new LiveTeamWriteError(null, `the setting ${key}`);
  }

  private async checkStoredEntity(kind: EntityKind, id: string): Promise<void> {
    const stored = await this.inner.getEntity(kind, id);
    if (stored) await this.check(stored.team, `${kind} ${id}`);
  }

  private async checkStoredRecord(kind: RecordKind, id: string): Promise<void> {
    const stored = await this.inner.getRecord(kind, id);
    if (stored) await this.check(stored.team, `${kind} ${id}`);
  }

  private async check(team: string | null, what: string): Promise<void> {
    if (team !== null) {
      let live = this.livemode.get(team);
      if (live === undefined) {
        // A team without an entity is nobody's example: refused as live.
        live = (await this.inner.getEntity<TeamState>('team', team))?.state.livemode ?? true;
        this.livemode.set(team, live);
      }
      if (!live) return;
    }
    throw new LiveTeamWriteError(team, what);
  }
}
