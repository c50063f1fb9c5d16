import type { Migration } from 'kysely';
import type { RecordKind } from '../../schemas/enums.js';
import type { IdempotencyClaim, IdempotencyRow } from '../idempotency-types.js';
import type { IntakeSourceRow, QuarantineFilter, QuarantineRow, QuarantineSummary } from '../intake-types.js';
import { TRIM_BATCH_ROWS, type TrimOptions } from '../trim-options.js';
import type {
  AuditEntry,
  AuditQuery,
  Entity,
  EntityKind,
  ErasedRecord,
  FeedPageQuery,
  FeedRow,
  JsonFeedPage,
  JsonPage,
  LeadDetailRow,
  ListQuery,
  PageRow,
  SearchQuery,
  StoredRecord,
} from '../types.js';
import type {
  LastUse,
  LastUseKind,
  RequestLogQuery,
  StoredRequestLogRow,
  UsageBatch,
  UsageCount,
  UsageCountQuery,
  UsageTrim,
} from '../usage-types.js';
import type { Backend, Dialect } from './dialect.js';
import { type IdempotencyStatements, idempotencyStatementsFor, toIdempotencyRow } from './idempotency-statements.js';
import {
  type IntakeStatements,
  intakeStatementsFor,
  toQuarantine,
  toQuarantineSummary,
  toSource,
} from './intake-statements.js';
import { MIGRATIONS, pendingOf } from './migrations.js';
import * as rows from './rows.js';
import {
  entityLookup,
  entityLookupValues,
  type FeedPageParams,
  type PageParams,
  type Statements,
  statementsFor,
} from './statements.js';
import { type RunBatch, trimInBatches } from './trim.js';
import { type UsageStatements, usageStatements } from './usage-statements.js';
import * as usage from './usage-store.js';

/**
 * The reads of `Store` outside a transaction, the same on every backend: one shared statement each
 * (statements.ts), its rows mapped by rows.ts. A backend says how it runs a statement (`all`) and how a
 * retention batch runs (`trimBatch`), and adds its writes.
 */
export abstract class SqlStore {
  readonly backend: Backend;
  protected readonly sql: Statements;
  /** The request log's, usage counts' and last uses' statements (usage-statements.ts). */
  protected readonly usageSql: UsageStatements;
  protected readonly intakeSql: IntakeStatements;
  protected readonly idempotencySql: IdempotencyStatements;
  /** Every migration of this backend, by name. */
  protected readonly migrations: Record<string, Migration>;

  constructor(dialect: Dialect) {
    this.backend = dialect.backend;
    this.sql = statementsFor(dialect);
    this.usageSql = usageStatements(dialect);
    this.intakeSql = intakeStatementsFor(dialect);
    this.idempotencySql = idempotencyStatementsFor(dialect);
    this.migrations = MIGRATIONS[dialect.backend];
  }

  /** Runs a read statement outside any transaction (a prepared statement of the read connection or pool). */
  protected abstract all(text: string, values?: unknown[]): Promise<rows.Row[]>;
  /** Runs one batch of retention (sql/trim.ts). */
  protected abstract trimBatch: RunBatch;

  async getEntity<S>(kind: EntityKind, id: string): Promise<Entity<S> | undefined> {
    const [row] = await this.all(this.sql.entity, [kind, id]);
    return rows.toEntity<S>(row);
  }

  async findEntities<S>(kind: EntityKind, by: { team?: string; parent?: string }): Promise<Entity<S>[]> {
    const found = await this.all(this.sql.entities[entityLookup(by)], entityLookupValues(kind, by));
    return found.map((row) => rows.toEntity<S>(row) as Entity<S>);
  }

  async getRecord(kind: RecordKind, id: string): Promise<StoredRecord | undefined> {
    const [row] = await this.all(this.sql.record, [kind, id]);
    return rows.toStored(row);
  }

  async getRecords(kind: RecordKind, ids: readonly string[]): Promise<StoredRecord[]> {
    const found = await this.all(this.sql.liveRecords, [kind, JSON.stringify(ids)]);
    return found.map((row) => rows.toStored(row) as StoredRecord);
  }

  async listRecords(q: ListQuery): Promise<PageRow[]> {
    const statement = this.sql.listRecords[q.filter?.by ?? 'none'];
    return (await this.all(statement.text, statement.values(pageParams(q)))).map(rows.toPageRow);
  }

  async listPage(q: ListQuery): Promise<JsonPage> {
    const by = q.filter?.by ?? 'none';
    const params = pageParams(q);
    let [row] = await this.all(this.sql.listPage[by].text, this.sql.listPage[by].values(params));
    if (!rows.joinedInOrder(row)) {
      [row] = await this.all(this.sql.listPageSorted[by].text, this.sql.listPageSorted[by].values(params));
    }
    return rows.toJsonPage(row);
  }

  async leadDetail(id: string): Promise<LeadDetailRow | undefined> {
    const [row] = await this.all(this.sql.leadDetail, [id]);
    return rows.toLeadDetail(row);
  }

  async searchLeads(q: SearchQuery): Promise<PageRow[]> {
    const { team, after, limit } = q;
    const params = { team, email: q.email ?? null, phone: q.phone ?? null, after, limit };
    return (await this.all(this.sql.searchLeads.text, this.sql.searchLeads.values(params))).map(rows.toPageRow);
  }

  async readFeed(team: string, after: number, limit: number): Promise<FeedRow[]> {
    return (await this.all(this.sql.readFeed, [team, after, limit])).map(rows.toFeedRow);
  }

  async feedPage(q: FeedPageQuery): Promise<JsonFeedPage> {
    const params: FeedPageParams = {
      team: q.team,
      after: q.after,
      fetch: q.limit + 1,
      cutoff: q.cutoff,
      limit: q.limit,
    };
    let [row] = await this.all(this.sql.feedPage.text, this.sql.feedPage.values(params));
    if (!rows.joinedInOrder(row))
      [row] = await this.all(this.sql.feedPageSorted.text, this.sql.feedPageSorted.values(params));
    return rows.toJsonFeedPage(row, q.limit);
  }

  async feedHead(team: string): Promise<number> {
    const [row] = await this.all(this.sql.feedHead, [team]);
    return row ? rows.asNumber(row.last_pos) : 0;
  }

  async trimFeed(removalsBefore: number | null, supersededBefore: number, options: TrimOptions = {}): Promise<number> {
    return trimInBatches(this.sql, this.trimBatch, removalsBefore, supersededBefore, options);
  }

  async intakeSources(): Promise<IntakeSourceRow[]> {
    return (await this.all(this.intakeSql.sources)).map(toSource);
  }

  async intakeQuarantine(filter: QuarantineFilter): Promise<QuarantineRow[]> {
    const { text, values } = this.intakeSql.quarantine(filter);
    return (await this.all(text, values)).map(toQuarantine);
  }

  async quarantineSummary(): Promise<QuarantineSummary[]> {
    return (await this.all(this.intakeSql.quarantineSummary)).map(toQuarantineSummary);
  }

  /** Claims an idempotency key (a key stored before `expiredBefore` is forgotten first), or reads its row. */
  async claimIdempotency(
    row: Pick<IdempotencyRow, 'owner' | 'key' | 'digest' | 'createdAt'>,
    expiredBefore: number,
  ): Promise<IdempotencyClaim> {
    const q = this.idempotencySql;
    return this.trimBatch(async (run) => {
      await run(q.dropExpired, [row.owner, row.key, expiredBefore]);
      const { changes } = await run(q.claim, [row.owner, row.key, row.digest, row.createdAt]);
      if (changes === 1) return { claimed: true } as const;
      const [found] = (await run(q.read, [row.owner, row.key])).rows;
      // Gone between the insert and the read (released meanwhile): the caller may try again.
      if (!found) return { claimed: true } as const;
      return { claimed: false, row: toIdempotencyRow(found) } as const;
    });
  }

  /** Stores the answer of the request that claimed the key. */
  async finishIdempotency(row: Pick<IdempotencyRow, 'owner' | 'key' | 'digest' | 'status' | 'answer'>): Promise<void> {
    await this.trimBatch((run) =>
      run(this.idempotencySql.finish, [row.status, row.answer, row.owner, row.key, row.digest]),
    );
  }

  /** Forgets a claim whose request gave no answer worth repeating (a failure of the service). */
  async releaseIdempotency(row: Pick<IdempotencyRow, 'owner' | 'key' | 'digest'>): Promise<void> {
    await this.trimBatch((run) => run(this.idempotencySql.release, [row.owner, row.key, row.digest]));
  }

  /** Retention: idempotency keys stored before `before` (epoch ms), in bounded batches; rows dropped. */
  async trimIdempotency(before: number): Promise<number> {
    let dropped = 0;
    for (;;) {
      const { changes } = await this.trimBatch((run) => run(this.idempotencySql.trim, [before, TRIM_BATCH_ROWS]));
      dropped += changes;
      if (changes < TRIM_BATCH_ROWS) return dropped;
    }
  }

  /** Applied ids older than the window, in bounded batches like the feed's retention (sql/trim.ts). */
  async trimIntakeIds(before: number, options: { batchSize?: number } = {}): Promise<number> {
    const size = options.batchSize ?? TRIM_BATCH_ROWS;
    let dropped = 0;
    for (;;) {
      const { changes } = await this.trimBatch((run) => run(this.intakeSql.trimIds, [before, size]));
      dropped += changes;
      if (changes < size) return dropped;
    }
  }

  async erasedRecords(): Promise<ErasedRecord[]> {
    return (await this.all(this.sql.erasedRecords)).map(rows.toErasedRecord);
  }

  async getMeta(key: string): Promise<string | undefined> {
    const [row] = await this.all(this.sql.meta, [key]);
    return row?.value as string | undefined;
  }

  async listAudit(query: AuditQuery): Promise<AuditEntry[]> {
    const { text, values } = this.sql.listAudit(query);
    return (await this.all(text, values)).reverse().map(rows.toAuditEntry);
  }

  /** A flush of the recorder: each table one statement, in one short transaction on SQLite (usage-store.ts). */
  async appendUsage(batch: UsageBatch): Promise<void> {
    await usage.appendUsage(this.usageSql, this.usageBatch, batch);
  }

  /** How a flush's statements run: in one transaction, so a failed flush left nothing behind to write twice. */
  protected get usageBatch(): RunBatch {
    // SQLite's retention batch is one write transaction already.
    return this.trimBatch;
  }

  async trimUsage(trim: UsageTrim): Promise<number> {
    return usage.trimUsage(this.usageSql, (text, values) => this.all(text, values), this.trimBatch, trim);
  }

  async requestLog(query: RequestLogQuery): Promise<StoredRequestLogRow[]> {
    return usage.requestLog(this.usageSql, (text, values) => this.all(text, values), query);
  }

  async usageCounts(query: UsageCountQuery): Promise<UsageCount[]> {
    return usage.usageCounts(this.usageSql, (text, values) => this.all(text, values), query);
  }

  async lastUses(kind: LastUseKind, ids: readonly string[]): Promise<LastUse[]> {
    return usage.lastUses(this.usageSql, (text, values) => this.all(text, values), kind, ids);
  }

  async ping(): Promise<void> {
    await this.all(this.sql.ping);
  }

  async pendingMigrations(): Promise<string[]> {
    // Reads the database's catalogue (SELECT 1 would not read a SQLite file), so a database that became
    // unreadable fails here; prepared statements, as readiness asks every few seconds. No migration table
    // yet: nothing is applied.
    const [table] = await this.all(this.sql.migrationTable);
    return pendingOf(this.migrations, table ? await this.all(this.sql.appliedMigrations) : []);
  }

  async feedHeadTimes(): Promise<{ team: string; recordedAt: number }[]> {
    return (await this.all(this.sql.feedHeadTimes)).map(rows.toFeedHeadTime);
  }
}

/** A list query as its statement binds it: the filter's value by name. */
function pageParams(q: ListQuery): PageParams {
  const { team, kind, after, limit } = q;
  return q.filter ? { team, kind, value: q.filter.value, after, limit } : { team, kind, after, limit };
}
