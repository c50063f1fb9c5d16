import type { FeedKind, RecordKind, RemovalReason } from '../../schemas/enums.js';
import type { Entity, EntityKind, FeedRow, PageRow, StoredRecord } from '../store.js';

// The one place PostgreSQL rows become interface objects. pg returns bigint/bigserial columns
// (seq, pos, recorded_at) as strings; the interface wants numbers (all far below 2^53).
// Timestamps stay what the interface says: `updated_at` the stored ISO string, `recorded_at` epoch ms.

type Row = Record<string, unknown>;

export function toEntity<S>(row: Row | undefined): Entity<S> | undefined {
  if (!row) return undefined;
  return {
    kind: row.kind as EntityKind,
    id: row.id as string,
    team: row.team as string | null,
    parent: row.parent as string | null,
    state: JSON.parse(row.state as string) as S,
  };
}

export function toStored(row: Row | undefined): StoredRecord | undefined {
  if (!row) return undefined;
  return {
    kind: row.kind as RecordKind,
    id: row.id as string,
    team: row.team as string,
    seq: Number(row.seq),
    version: Number(row.version),
    json: row.json as string | null,
    removed: row.removed as RemovalReason | null,
  };
}

export function toPageRow(row: Row): PageRow {
  return { seq: Number(row.seq), json: row.json as string };
}

export function toFeedRow(row: Row): FeedRow {
  return {
    team: row.team as string,
    pos: Number(row.pos),
    kind: row.kind as FeedKind,
    id: row.id as string,
    version: Number(row.version),
    recordedAt: Number(row.recorded_at),
    body: row.body as string | null,
    removed: row.removed as RemovalReason | null,
  };
}
