import type { Dialect } from './dialect.js';
import { NamedStatement } from './named-statement.js';

// The statements of the request log, the usage counts and the last uses (migration 0008_request_log,
// docs/request-log.md), both backends. A flush writes each table with one statement: its rows go as one JSON
// array of arrays, which the database unpacks (`json_each` on SQLite, `json_array_elements` on PostgreSQL),
// so a batch of thousands of rows is three statements whatever its size.

/** Column `i` of a row unpacked from the JSON array, as `type`. */
function field(d: Dialect, i: number, type: 'text' | 'integer' | 'bigint'): string {
  return d.backend === 'sqlite' ? `json_extract(value, '$[${i}]')` : `(value->>${i})::${type}`;
}

/** The rows of the array bound at `:rows`. */
function rowsOf(d: Dialect): string {
  return d.backend === 'sqlite' ? 'json_each(:rows)' : 'json_array_elements(CAST(:rows AS json))';
}

/** The order a request log row's values take in the JSON array. */
export const LOG_FIELDS = ['at', 'integration', 'requestId', 'method', 'route', 'status', 'code', 'items', 'address'];
/** The order a usage count's values take. */
export const COUNT_FIELDS = ['integration', 'hour', 'route', 'reason', 'requests', 'items', 'lastAt'];
/** The order a last use's values take. */
export const LAST_USE_FIELDS = ['kind', 'id', 'at', 'address'];

const LOG_TYPES = ['bigint', 'text', 'text', 'text', 'text', 'integer', 'text', 'integer', 'text'] as const;
const COUNT_TYPES = ['text', 'bigint', 'text', 'text', 'bigint', 'bigint', 'bigint'] as const;
const LAST_USE_TYPES = ['text', 'text', 'bigint', 'text'] as const;

const select = (d: Dialect, types: readonly ('text' | 'integer' | 'bigint')[]) =>
  types.map((type, i) => field(d, i, type)).join(', ');

/** Null filters match everything; each is cast so PostgreSQL knows its type. */
export interface LogPageParams {
  integration: string | null;
  before: number | null;
  since: number | null;
  until: number | null;
  status: number | null;
  failed: number | null;
  code: string | null;
  route: string | null;
  limit: number;
}

const LOG_COLUMNS = 'seq, at, integration, request_id, method, route, status, code, items, address';

/** A page of the request log, newest first: the optional filters, after `scope`. */
function logPage(d: Dialect, scope: string): string {
  return `SELECT ${LOG_COLUMNS} FROM request_log
    WHERE ${scope}(CAST(:before AS bigint) IS NULL OR seq < :before)
      AND (CAST(:since AS bigint) IS NULL OR at >= :since)
      AND (CAST(:until AS bigint) IS NULL OR at < :until)
      AND (CAST(:status AS integer) IS NULL OR status = :status)
      AND (CAST(:failed AS integer) IS NULL OR (status >= 400) = (:failed = 1))
      AND (CAST(:code AS text) IS NULL OR code = :code)
      AND (CAST(:route AS text) IS NULL OR route = :route)
    ORDER BY seq DESC ${d.limit}:limit`;
}

export function usageStatements(d: Dialect) {
  const named = <P extends object>(s: string) => new NamedStatement<P>(s, d.backend);
  return {
    appendLog: named<{ rows: string }>(
      `INSERT INTO request_log (at, integration, request_id, method, route, status, code, items, address)
        SELECT ${select(d, LOG_TYPES)} FROM ${rowsOf(d)}`,
    ),
    // Additive, so every process adds its own counts to the same rows. `WHERE true` keeps SQLite from
    // reading ON CONFLICT as a join's ON. Rows come sorted by key: two processes' upserts take row locks
    // in one order and cannot deadlock.
    addCounts: named<{ rows: string }>(
      `INSERT INTO usage_counts (integration, hour, route, reason, requests, items, last_at)
        SELECT ${select(d, COUNT_TYPES)} FROM ${rowsOf(d)} WHERE true
        ON CONFLICT (integration, hour, route, reason) DO UPDATE SET
          requests = usage_counts.requests + excluded.requests,
          items = usage_counts.items + excluded.items,
          last_at = ${d.larger}(usage_counts.last_at, excluded.last_at)`,
    ),
    // A newer use replaces an older one; an older one arriving late (another process's flush) changes nothing.
    putLastUses: named<{ rows: string }>(
      `INSERT INTO last_use (kind, id, at, address)
        SELECT ${select(d, LAST_USE_TYPES)} FROM ${rowsOf(d)} WHERE true
        ON CONFLICT (kind, id) DO UPDATE SET at = excluded.at, address = excluded.address
        WHERE excluded.at > last_use.at`,
    ),
    // One integration's page walks its index (integration, seq) newest first; every integration's, the
    // table's key. Two statements, not `:integration IS NULL OR ...`: a plan made once for any binding could
    // use neither index.
    logPage: named<LogPageParams>(logPage(d, 'integration = :integration AND ')),
    logPageAll: named<LogPageParams>(logPage(d, '')),
    counts: named<{ integration: string | null; sinceHour: number }>(
      `SELECT integration, hour, route, reason, requests, items, last_at FROM usage_counts
        WHERE (CAST(:integration AS text) IS NULL OR integration = :integration) AND hour >= :sinceHour
        ORDER BY hour, integration, route, reason`,
    ),
    lastUses: named<{ kind: string; ids: string }>(
      `SELECT kind, id, at, address FROM last_use
        WHERE kind = :kind AND id IN (${d.jsonArrayItems.replace('?', ':ids')})`,
    ),
    // Retention, in bounded batches (usage-trim.ts).
    trimLogByAge: named<{ cutoff: number; size: number }>(
      `DELETE FROM request_log WHERE seq IN (
        SELECT seq FROM request_log WHERE at < :cutoff ORDER BY seq ${d.limit}:size)`,
    ),
    crowdedIntegrations: named<{ rows: number }>(
      `SELECT integration FROM request_log GROUP BY integration HAVING count(*) > :rows`,
    ),
    /** The newest row of an integration beyond its allowance: it and everything older go. */
    crowdEdge: named<{ integration: string; rows: number }>(
      `SELECT seq FROM request_log WHERE integration = :integration ORDER BY seq DESC ${d.limit}1 OFFSET :rows`,
    ),
    trimLogOfIntegration: named<{ integration: string; edge: number; size: number }>(
      `DELETE FROM request_log WHERE seq IN (
        SELECT seq FROM request_log WHERE integration = :integration AND seq <= :edge
        ORDER BY seq ${d.limit}:size)`,
    ),
    trimCounts: named<{ cutoff: number }>(`DELETE FROM usage_counts WHERE hour < :cutoff`),
  };
}

export type UsageStatements = ReturnType<typeof usageStatements>;
