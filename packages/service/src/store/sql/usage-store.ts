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
import { asNumber, type Row } from './rows.js';
import type { RunBatch } from './trim.js';
import { COUNT_FIELDS, LAST_USE_FIELDS, LOG_FIELDS, type UsageStatements } from './usage-statements.js';

// The request log, usage counts and last uses on either backend (store.ts: appendUsage, trimUsage and their
// reads). A backend gives how it runs a read (`all`) and a batch of statements (`batch`: one transaction on
// SQLite, each statement on its own on PostgreSQL).

type All = (text: string, values?: unknown[]) => Promise<Row[]>;

/** Rows as one JSON array of arrays, each in the order of `fields`. */
function packed<T extends object>(rows: readonly T[], fields: readonly string[]): string {
  return JSON.stringify(rows.map((row) => fields.map((f) => (row as Record<string, unknown>)[f] ?? null)));
}

const countKey = (c: UsageCount) => `${c.integration}\u0000${c.hour}\u0000${c.route}\u0000${c.reason}`;
const useKey = (u: LastUse) => `${u.kind}\u0000${u.id}`;
const byKey =
  <T>(key: (row: T) => string) =>
  (a: T, b: T) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;

export async function appendUsage(sql: UsageStatements, batch: RunBatch, rows: UsageBatch): Promise<void> {
  const { log, counts, lastUses } = rows;
  if (log.length === 0 && counts.length === 0 && lastUses.length === 0) return;
  // Upserts in key order, so two processes' batches lock shared rows in the same order (no deadlock).
  const sortedCounts = [...counts].sort(byKey(countKey));
  const sortedUses = [...lastUses].sort(byKey(useKey));
  await batch(async (run) => {
    if (log.length > 0) await run(sql.appendLog.text, sql.appendLog.values({ rows: packed(log, LOG_FIELDS) }));
    if (sortedCounts.length > 0) {
      await run(sql.addCounts.text, sql.addCounts.values({ rows: packed(sortedCounts, COUNT_FIELDS) }));
    }
    if (sortedUses.length > 0) {
      await run(sql.putLastUses.text, sql.putLastUses.values({ rows: packed(sortedUses, LAST_USE_FIELDS) }));
    }
  });
}

export async function requestLog(sql: UsageStatements, all: All, q: RequestLogQuery): Promise<StoredRequestLogRow[]> {
  const params = { ...q, failed: q.failed === null ? null : q.failed ? 1 : 0 };
  const statement = q.integration === null ? sql.logPageAll : sql.logPage;
  const found = await all(statement.text, statement.values(params));
  return found.map((row) => ({
    seq: asNumber(row.seq),
    at: asNumber(row.at),
    integration: row.integration as string,
    requestId: row.request_id as string,
    method: row.method as string,
    route: row.route as string,
    status: asNumber(row.status),
    code: (row.code as string | null) ?? null,
    items: asNumber(row.items),
    address: row.address as string,
  }));
}

export async function usageCounts(sql: UsageStatements, all: All, q: UsageCountQuery): Promise<UsageCount[]> {
  const found = await all(sql.counts.text, sql.counts.values(q));
  return found.map((row) => ({
    integration: row.integration as string,
    hour: asNumber(row.hour),
    route: row.route as string,
    reason: row.reason as string,
    requests: asNumber(row.requests),
    items: asNumber(row.items),
    lastAt: asNumber(row.last_at),
  }));
}

export async function lastUses(
  sql: UsageStatements,
  all: All,
  kind: LastUseKind,
  ids: readonly string[],
): Promise<LastUse[]> {
  if (ids.length === 0) return [];
  const found = await all(sql.lastUses.text, sql.lastUses.values({ kind, ids: JSON.stringify(ids) }));
  return found.map((row) => ({
    kind: row.kind as LastUseKind,
    id: row.id as string,
    at: asNumber(row.at),
    address: row.address as string,
  }));
}

/**
 * Retention: request log rows older than `logBefore`, then each integration's rows beyond its allowance
 * (oldest first), then usage counts of hours before `countsBefore`; deletes of at most `batchSize` rows,
 * each its own short transaction. Rows dropped.
 */
export async function trimUsage(sql: UsageStatements, all: All, batch: RunBatch, t: UsageTrim): Promise<number> {
  const size = t.batchSize ?? 1000;
  let dropped = 0;
  const until = async (text: string, values: unknown[]) => {
    for (;;) {
      const { changes } = await batch((run) => run(text, values));
      dropped += changes;
      if (changes < size || t.signal?.aborted) return;
    }
  };
  await until(sql.trimLogByAge.text, sql.trimLogByAge.values({ cutoff: t.logBefore, size }));
  const rows = t.rowsPerIntegration;
  for (const row of await all(sql.crowdedIntegrations.text, sql.crowdedIntegrations.values({ rows }))) {
    if (t.signal?.aborted) return dropped;
    const integration = row.integration as string;
    const [edge] = await all(sql.crowdEdge.text, sql.crowdEdge.values({ integration, rows }));
    if (!edge) continue;
    const params = { integration, edge: asNumber(edge.seq), size };
    await until(sql.trimLogOfIntegration.text, sql.trimLogOfIntegration.values(params));
  }
  const { changes } = await batch((run) => run(sql.trimCounts.text, sql.trimCounts.values({ cutoff: t.countsBefore })));
  return dropped + changes;
}
