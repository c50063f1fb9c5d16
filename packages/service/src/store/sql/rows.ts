import type { FeedKind, RecordKind, RemovalReason } from '../../schemas/enums.js';
import type * as store from '../types.js';
import { readState } from './state-format.js';

// The one place database rows become interface objects, for both backends. What the drivers return
// differs in two ways only, each coerced by one function below:
// - integers: better-sqlite3 returns numbers; pg returns bigint and bigserial columns (seq, pos,
//   recorded_at, counts) as strings. The interface wants numbers (all far below 2^53): `asNumber`.
// - joined bytes: SQLite returns a page's joined JSON as a BLOB (a Buffer); PostgreSQL as text: `asBytes`.
// Timestamps stay what the interface says: `updated_at` the stored ISO string, `recorded_at` epoch ms.

export type Row = Record<string, unknown>;

const EMPTY = Buffer.alloc(0);

/** An integer column as a number, whichever driver read it. */
export const asNumber = (value: unknown): number => (typeof value === 'number' ? value : Number(value));

/** A value the database built as bytes (SQLite) or text (PostgreSQL), as bytes; null is empty. */
export const asBytes = (value: unknown): Buffer =>
  value == null ? EMPTY : Buffer.isBuffer(value) ? value : Buffer.from(value as string);

export function toEntity<S>(row: Row | undefined): store.Entity<S> | undefined {
  if (!row) return undefined;
  const kind = row.kind as store.EntityKind;
  return {
    kind,
    id: row.id as string,
    team: row.team as string | null,
    parent: row.parent as string | null,
    state: readState(kind, JSON.parse(row.state as string)) as S,
  };
}

/** The columns a record row and a feed entry share. */
function versioned<K>(row: Row) {
  return {
    kind: row.kind as K,
    id: row.id as string,
    team: row.team as string,
    version: asNumber(row.version),
    removed: row.removed as RemovalReason | null,
  };
}

export function toStored(row: Row | undefined): store.StoredRecord | undefined {
  return row && { ...versioned<RecordKind>(row), seq: asNumber(row.seq), json: row.json as string | null };
}

export function toPageRow(row: Row): store.PageRow {
  return { seq: asNumber(row.seq), json: row.json as string };
}

export function toFeedRow(row: Row): store.FeedRow {
  const at = asNumber(row.recorded_at);
  return { ...versioned<FeedKind>(row), pos: asNumber(row.pos), recordedAt: at, body: row.body as string | null };
}

/**
 * Whether a list page's bodies were joined in position order: its `joined_order` (the positions, comma
 * separated, in the order the database joined them) ascends, or the backend sorted them itself (null).
 */
export function joinedInOrder(row: Row | undefined): boolean {
  const order = row?.joined_order;
  if (typeof order !== 'string') return true;
  let previous = -1;
  let current = 0;
  for (let i = 0; i <= order.length; i++) {
    const code = i < order.length ? order.charCodeAt(i) : 44;
    if (code !== 44) {
      current = current * 10 + (code - 48);
      continue;
    }
    if (current <= previous) return false;
    previous = current;
    current = 0;
  }
  return true;
}

/** The one row of a list page statement (statements.ts, `listPage`); an empty page has count 0. */
export function toJsonPage(row: Row | undefined): store.JsonPage {
  const count = asNumber(row?.n ?? 0);
  return {
    items: asBytes(row?.items),
    count,
    // SQLite answers a boolean as 1 or 0, PostgreSQL as true or false.
    hasMore: row?.more === 1 || row?.more === true,
    last: row?.last_seq == null ? null : { seq: asNumber(row.last_seq), id: row.last_id as string },
  };
}

/** The one row of a feed page statement (statements.ts, `feedPage`); `limit` is the page size asked for. */
export function toJsonFeedPage(row: Row | undefined, limit: number): store.JsonFeedPage {
  return {
    items: asBytes(row?.items),
    count: asNumber(row?.n ?? 0),
    hasMore: asNumber(row?.ready ?? 0) > limit,
    last: row?.last_pos == null ? null : { pos: asNumber(row.last_pos), recordedAt: asNumber(row.last_recorded_at) },
    head: asNumber(row?.head ?? 0),
  };
}

/** The lead's JSON with `attribution` and `response` added before its closing brace (each facet or null). */
export function toLeadDetail(row: Row | undefined): store.LeadDetailRow | undefined {
  if (!row) return undefined;
  const lead = row.lead as string;
  const attribution = (row.attribution as string | null) ?? 'null';
  const response = (row.response as string | null) ?? 'null';
  return {
    team: row.team as string,
    body: `${lead.slice(0, -1)},"attribution":${attribution},"response":${response}}`,
  };
}

export function toErasedRecord(row: Row): store.ErasedRecord {
  return {
    kind: row.kind as RecordKind,
    id: row.id as string,
    team: row.team as string,
    erasedAt: String(row.updated_at),
  };
}

export function toFeedHeadTime(row: Row): { team: string; recordedAt: number } {
  return { team: row.team as string, recordedAt: asNumber(row.recorded_at) };
}

/** The stored columns of an audit entry: at, actor, action, target (ids comma separated), outcome, details (JSON). */
export function auditColumns(e: store.AuditEntry): [string, string, string, string, string, string] {
  return [e.at, e.actor, e.action, e.target.join(','), e.outcome, JSON.stringify(e.details)];
}

/** An audit row read back. */
export function toAuditEntry(row: Row): store.AuditEntry {
  const target = String(row.target);
  return {
    at: String(row.at),
    actor: String(row.actor),
    action: String(row.action),
    target: target ? target.split(',') : [],
    outcome: String(row.outcome),
    details: JSON.parse(String(row.details)) as Record<string, unknown>,
  };
}
