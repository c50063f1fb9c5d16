import { sql } from 'kysely';
import type { FeedKind, RecordKind, RemovalReason } from '../../schemas/enums.js';
import { entityValues } from '../sql/columns.js';
import { POSTGRES } from '../sql/dialect.js';
import { asNumber, type Row, toEntity, toStored } from '../sql/rows.js';
import { entityLookup, entityLookupValues, statementsFor } from '../sql/statements.js';
import type { WriteTx } from '../store.js';
import type { Entity, EntityKind, FeedEntry, RecordRow, StoredRecord, WriteSet } from '../types.js';
import { type Db, rows, run } from './postgres-connection.js';
import { PostgresIntakeTx } from './postgres-intake-tx.js';
import { applyPostgresWriteSet, col } from './postgres-write-set.js';

const SQL = statementsFor(POSTGRES);

/** Namespaces of the advisory locks that guard keys a transaction read as absent. */
type LockSpace = 'entity' | 'record' | 'meta';

/** Another transaction holds what this one needs: roll back and run again (SQLSTATE 40001). */
export class WriteConflict extends Error {
  readonly code = '40001';
  constructor() {
    super('write conflict: another transaction is creating the same row');
  }
}

/** A statement and its values. */
type Statement = [text: string, values: unknown[]];

/** A read `lockedRow` runs: `peek` without a row lock (to learn the row's team), `lock` with one. */
interface LockedRead {
  peek: Statement;
  lock: Statement;
}

/**
 * The `WriteTx` of one READ COMMITTED transaction. SQLite has one writer, so a transaction's reads
 * stay true until it commits; here every read locks what it read until the transaction ends:
 * - a team's `feed_heads` row is its write lock, taken before the first row of that team is
 *   locked, so writers of one team queue in one place (no deadlock between them) and `appendFeed`
 *   increments a head this transaction already holds;
 * - rows are read `FOR UPDATE` (a waiting reader then gets the committed new version);
 * - a key read as absent gets an advisory lock when the transaction writes it, and is checked to be
 *   still absent then, so two writers cannot both create it.
 */
export class PostgresWriteTx implements WriteTx {
  private readonly lockedTeams = new Set<string>();
  /**
   * Keys read as absent and not locked yet, by lock name. Locking each at its read cost two more round
   * trips (the lock, and a read in a new snapshot); a transaction that creates rows reads hundreds of
   * absent keys. The keys are locked when the transaction writes them, all of a batch at once, and
   * checked to be still absent; a key another writer created meanwhile rolls this transaction back to
   * run again (it then reads the row).
   */
  private readonly unverified = new Map<string, { space: LockSpace; kind: string; id: string }>();

  readonly intake: PostgresIntakeTx;

  constructor(
    private readonly trx: Db,
    private readonly schema: string,
  ) {
    this.intake = new PostgresIntakeTx(trx);
  }

  private async lockTeam(team: string | null | undefined): Promise<void> {
    if (team == null || this.lockedTeams.has(team)) return;
    // The no-op update locks the head row (creating it at 0 when the team has none yet).
    await sql`INSERT INTO feed_heads AS h (team, last_pos) VALUES (${team}, 0)
      ON CONFLICT (team) DO UPDATE SET last_pos = h.last_pos`.execute(this.trx);
    this.lockedTeams.add(team);
  }

  private lockName(space: LockSpace, key: string): string {
    return `${this.schema}:${space}:${key}`;
  }

  /**
   * Locks the given keys read as absent and checks they still are. Whoever holds one may be waiting
   * for a team this transaction holds (it creates the row, then appends to the feed): holding a team,
   * only try, and on failure roll back to run again, rather than wait for PostgreSQL to find the
   * deadlock (deadlock_timeout, 1 s).
   */
  private async verifyAbsent(names: readonly string[]): Promise<void> {
    const keys = [...new Set(names)].filter((name) => this.unverified.has(name)).sort();
    if (keys.length === 0) return;
    if (this.lockedTeams.size === 0) {
      await sql`SELECT pg_advisory_xact_lock(hashtextextended(n, 0)) FROM unnest(${keys}::text[]) AS n`.execute(
        this.trx,
      );
    } else {
      const [got] = await rows(
        this.trx,
        sql`SELECT bool_and(pg_try_advisory_xact_lock(hashtextextended(n, 0))) AS ok FROM unnest(${keys}::text[]) AS n`,
      );
      if (got?.ok !== true) throw new WriteConflict();
    }
    // A new statement, so a new snapshot: rows committed before the locks were taken are seen.
    const of = (space: LockSpace) => keys.map((k) => this.unverified.get(k)!).filter((k) => k.space === space);
    const [entities, records, meta] = [of('entity'), of('record'), of('meta')];
    const [taken] = await rows(
      this.trx,
      sql`SELECT EXISTS (SELECT 1 FROM entities e JOIN unnest(${col(entities, 'kind')}::text[], ${col(entities, 'id')}::text[])
            AS k(kind, id) ON e.kind = k.kind AND e.id = k.id)
          OR EXISTS (SELECT 1 FROM records r JOIN unnest(${col(records, 'kind')}::text[], ${col(records, 'id')}::text[])
            AS k(kind, id) ON r.kind = k.kind AND r.id = k.id)
          OR EXISTS (SELECT 1 FROM meta m WHERE m.key = ANY(${col(meta, 'id')}::text[])) AS taken`,
    );
    if (taken?.taken === true) throw new WriteConflict();
    for (const key of keys) this.unverified.delete(key);
  }

  /**
   * Reads one row and leaves it locked, its team first: before this transaction holds any team it
   * peeks without a lock to learn the row's team and takes that, then locks the row (a read that
   * waits for the row then sees its newest committed version). An absent row cannot be locked; its
   * key is remembered and locked when it is written (`verifyAbsent`).
   */
  private async lockedRow(space: LockSpace, kind: string, id: string, read: LockedRead): Promise<Row | undefined> {
    if (space !== 'meta' && this.lockedTeams.size === 0) {
      const [peek] = await run(this.trx, ...read.peek);
      if (peek) await this.lockTeam(peek.team as string | null);
    }
    const [row] = await run(this.trx, ...read.lock);
    await this.lockTeam(row?.team as string | null | undefined);
    const name = this.lockName(space, space === 'meta' ? id : `${kind}:${id}`);
    if (!row) this.unverified.set(name, { space, kind, id });
    return row;
  }

  async getEntity<S>(kind: EntityKind, id: string): Promise<Entity<S> | undefined> {
    const key = [kind, id];
    return toEntity<S>(
      await this.lockedRow('entity', kind, id, { peek: [SQL.entity, key], lock: [SQL.entityLocked, key] }),
    );
  }

  async findEntities<S>(kind: EntityKind, by: { team?: string; parent?: string }): Promise<Entity<S>[]> {
    await this.lockTeam(by.team);
    const found = await run(this.trx, SQL.entitiesLocked[entityLookup(by)], entityLookupValues(kind, by));
    for (const r of found) await this.lockTeam(r.team as string | null);
    return found.map((r) => toEntity<S>(r) as Entity<S>);
  }

  async putEntity<S>(e: Entity<S>): Promise<void> {
    await this.lockTeam(e.team);
    await this.verifyAbsent([this.lockName('entity', `${e.kind}:${e.id}`)]);
    await run(this.trx, SQL.putEntity, entityValues(e));
  }

  async deleteEntity(kind: EntityKind, id: string): Promise<void> {
    await run(this.trx, SQL.deleteEntity, [kind, id]);
  }

  async getRecord(kind: RecordKind, id: string): Promise<StoredRecord | undefined> {
    const key = [kind, id];
    return toStored(
      await this.lockedRow('record', kind, id, { peek: [SQL.record, key], lock: [SQL.recordLocked, key] }),
    );
  }

  async putRecord(r: RecordRow): Promise<void> {
    await this.lockTeam(r.team);
    await this.verifyAbsent([this.lockName('record', `${r.kind}:${r.id}`)]);
    await run(this.trx, SQL.keepSupersededBody.text, SQL.keepSupersededBody.values(r));
    const values = [r.kind, r.id, r.team, r.lead, r.board, r.stage, r.status, r.email, r.phone, r.version];
    await run(this.trx, SQL.putRecord, [...values, r.updatedAt, r.json]);
  }

  async removeRecord(kind: RecordKind, id: string, reason: RemovalReason, version: number, at: string): Promise<void> {
    await run(this.trx, SQL.removeRecord.text, SQL.removeRecord.values({ kind, id, reason, version, at }));
  }

  async appendFeed(e: FeedEntry): Promise<number> {
    // The upsert locks the team's head row until this transaction ends (if it did not hold it
    // already): a second writer to the team waits for that lock and so reads the incremented head
    // only after this transaction committed or rolled back. Commit order = feed order.
    const [head] = await run(this.trx, SQL.nextFeedPos, [e.team]);
    this.lockedTeams.add(e.team);
    const pos = asNumber(head?.last_pos);
    await run(this.trx, SQL.insertFeed, [e.team, pos, e.kind, e.id, e.version, e.recordedAt, e.body, e.removed]);
    return pos;
  }

  async purgeFeed(kind: FeedKind, id: string): Promise<void> {
    await run(this.trx, SQL.purgeFeed, [kind, id]);
  }

  async getMany(keys: {
    entities: { kind: EntityKind; id: string }[];
    records: { kind: RecordKind; id: string }[];
  }): Promise<{ entities: Entity<unknown>[]; records: StoredRecord[] }> {
    const { entities, records } = keys;
    const [ek, ei, rk, ri] = [col(entities, 'kind'), col(entities, 'id'), col(records, 'kind'), col(records, 'id')];
    // Teams first, as one read does it: learn the rows' teams without a lock, take those not held
    // yet (in name order), then lock the rows.
    const teams = await rows(
      this.trx,
      sql`SELECT e.team FROM entities e JOIN unnest(${ek}::text[], ${ei}::text[]) AS k(kind, id)
            ON e.kind = k.kind AND e.id = k.id WHERE e.team IS NOT NULL
          UNION SELECT r.team FROM records r JOIN unnest(${rk}::text[], ${ri}::text[]) AS k(kind, id)
            ON r.kind = k.kind AND r.id = k.id
          ORDER BY 1`,
    );
    for (const t of teams) await this.lockTeam(t.team as string);
    const foundEntities = await rows(
      this.trx,
      sql`SELECT e.kind, e.id, e.team, e.parent, e.state FROM entities e
          JOIN unnest(${ek}::text[], ${ei}::text[]) AS k(kind, id) ON e.kind = k.kind AND e.id = k.id FOR UPDATE OF e`,
    );
    const foundRecords = await rows(
      this.trx,
      sql`SELECT r.seq, r.kind, r.id, r.team, r.version, r.json, r.removed FROM records r
          JOIN unnest(${rk}::text[], ${ri}::text[]) AS k(kind, id) ON r.kind = k.kind AND r.id = k.id FOR UPDATE OF r`,
    );
    // A row that moved to another team between the peek and the lock.
    for (const r of [...foundEntities, ...foundRecords]) await this.lockTeam(r.team as string | null);
    const present = new Set<string>();
    for (const r of foundEntities) present.add(this.lockName('entity', `${r.kind}:${r.id}`));
    for (const r of foundRecords) present.add(this.lockName('record', `${r.kind}:${r.id}`));
    for (const k of entities) {
      const name = this.lockName('entity', `${k.kind}:${k.id}`);
      if (!present.has(name)) this.unverified.set(name, { space: 'entity', kind: k.kind, id: k.id });
    }
    for (const k of records) {
      const name = this.lockName('record', `${k.kind}:${k.id}`);
      if (!present.has(name)) this.unverified.set(name, { space: 'record', kind: k.kind, id: k.id });
    }
    return {
      entities: foundEntities.map((r) => toEntity(r) as Entity<unknown>),
      records: foundRecords.map((r) => toStored(r) as StoredRecord),
    };
  }

  async lockFeedHead(team: string): Promise<number> {
    // The no-op upsert locks the head row (creating it at 0) until this transaction ends.
    const [head] = await rows(
      this.trx,
      sql`INSERT INTO feed_heads AS h (team, last_pos) VALUES (${team}, 0)
          ON CONFLICT (team) DO UPDATE SET last_pos = h.last_pos RETURNING last_pos`,
    );
    this.lockedTeams.add(team);
    return Number(head?.last_pos ?? 0);
  }

  async applyWrites(w: WriteSet): Promise<void> {
    // Every team written is locked first (rows a transaction writes belong to teams it holds).
    for (const e of w.putEntities) await this.lockTeam(e.team);
    for (const r of w.putRecords) await this.lockTeam(r.team);
    await this.verifyAbsent([
      ...w.putEntities.map((e) => this.lockName('entity', `${e.kind}:${e.id}`)),
      ...w.putRecords.map((r) => this.lockName('record', `${r.kind}:${r.id}`)),
    ]);
    for (const e of w.appendFeed) {
      if (!this.lockedTeams.has(e.team)) throw new Error(`feed head of ${e.team} is not locked`);
    }
    await applyPostgresWriteSet(this.trx, w);
  }

  async getMeta(key: string): Promise<string | undefined> {
    const read = { peek: [SQL.meta, [key]], lock: [SQL.metaLocked, [key]] } satisfies LockedRead;
    return (await this.lockedRow('meta', '', key, read))?.value as string | undefined;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.verifyAbsent([this.lockName('meta', key)]);
    await run(this.trx, SQL.putMeta, [key, value]);
  }
}
