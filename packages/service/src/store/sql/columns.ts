import type { Entity, FeedRow, RecordRow } from '../types.js';
import { storedState } from './state-format.js';

// The written columns of each table, listed once: every insert and upsert of both backends is built from
// these lists (statements.ts, and PostgreSQL's multi-row writes in postgres-write-set.ts).

/**
 * A written column: its name, the field of the row object its value comes from, and its PostgreSQL type
 * (multi-row writes pass the row objects as one JSON array and read each field back as that type). A new
 * column of a table is one more line here.
 */
export type Column<T> = readonly [name: string, field: keyof T & string, pgType: 'text' | 'integer' | 'bigint'];

/** An entity as written: its state serialized. */
export type EntityRow = Omit<Entity<unknown>, 'state'> & { state: string };

export const ENTITY_COLUMNS: readonly Column<EntityRow>[] = [
  ['kind', 'kind', 'text'],
  ['id', 'id', 'text'],
  ['team', 'team', 'text'],
  ['parent', 'parent', 'text'],
  ['state', 'state', 'text'],
];
export const RECORD_COLUMNS: readonly Column<RecordRow>[] = [
  ['kind', 'kind', 'text'],
  ['id', 'id', 'text'],
  ['team', 'team', 'text'],
  ['lead', 'lead', 'text'],
  ['board', 'board', 'text'],
  ['stage', 'stage', 'text'],
  ['status', 'status', 'text'],
  ['email', 'email', 'text'],
  ['phone', 'phone', 'text'],
  ['version', 'version', 'integer'],
  ['updated_at', 'updatedAt', 'text'],
  ['json', 'json', 'text'],
];
export const FEED_COLUMNS: readonly Column<FeedRow>[] = [
  ['team', 'team', 'text'],
  ['pos', 'pos', 'bigint'],
  ['kind', 'kind', 'text'],
  ['id', 'id', 'text'],
  ['version', 'version', 'integer'],
  ['recorded_at', 'recordedAt', 'bigint'],
  ['body', 'body', 'text'],
  ['removed', 'removed', 'text'],
];

/** The column names, comma separated. */
export const names = <T>(columns: readonly Column<T>[]): string => columns.map(([name]) => name).join(', ');

/** One row's values in column order (undefined is null). */
export const valuesOf = <T>(columns: readonly Column<T>[], row: T): unknown[] =>
  columns.map(([, field]) => row[field] ?? null);

/** An entity's values in column order: its state as stored (state-format.ts). */
export const entityValues = (e: Entity<unknown>): unknown[] => [
  e.kind,
  e.id,
  e.team,
  e.parent,
  JSON.stringify(storedState(e.kind, e.state)),
];

/** Insert or replace by (kind, id): every column but the key is replaced; a record keeps its keyset position and becomes live. */
export const ENTITY_UPSERT = upsert(ENTITY_COLUMNS, '');
export const RECORD_UPSERT = upsert(RECORD_COLUMNS, ', removed = NULL');
function upsert<T>(columns: readonly Column<T>[], more: string): string {
  const set = columns
    .filter(([name]) => name !== 'kind' && name !== 'id')
    .map(([name]) => `${name} = excluded.${name}`);
  return `ON CONFLICT (kind, id) DO UPDATE SET ${set.join(', ')}${more}`;
}
