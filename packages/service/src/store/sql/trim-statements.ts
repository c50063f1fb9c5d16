import type { Dialect } from './dialect.js';
import type { NamedStatement } from './named-statement.js';

/** What a retention statement binds (`trimStatements`): window keys are named by `keyParam`. */
export type TrimParams = Record<string, unknown>;

/** The parameter name of one column of a retention window's key: `after` or `end` and the column. */
export const keyParam = (edge: 'after' | 'end', column: string): string =>
  `${edge}${column.charAt(0).toUpperCase()}${column.slice(1)}`;

/**
 * Retention in batches (`Store.trimFeed`), each statement bounded by the batch size (`:size`):
 * - `trimRemovals`: expired removal entries (recorded before `:cutoff`), oldest first (partial index
 *   feed_removals), but never a team's newest entry (its head); every row a batch selects is deleted, so
 *   the next starts where it ended.
 * - `trimWindow`: the next window of entries in key order (the dialect's `windowKey`) after a key, its size
 *   and last key (no row once the feed is passed).
 * - `trimSuperseded`: the window's live entries with a newer entry of the same record recorded before
 *   `:cutoff` (index feed_record), between the key before the window and its last key.
 * The `Team` variants keep to one team's entries (`:team`), in (team, pos) order. A window's edges are
 * named per key column by `keyParam`: `:afterRowid`, or `:afterTeam, :afterPos`, and `:end...` alike.
 */
export function trimStatements(d: Dialect, named: (s: string) => NamedStatement<TrimParams>) {
  // A team's newest entry stays, even an expired removal: the feed lag gauge reads its time from it.
  const removals = (team: string) =>
    `DELETE FROM feed WHERE ${d.addressIn}SELECT ${d.rowAddress} FROM feed WHERE ${team}removed IS NOT NULL
      AND recorded_at < :cutoff
      AND NOT EXISTS (SELECT 1 FROM feed_heads h WHERE h.team = feed.team AND h.last_pos = feed.pos)
      ORDER BY recorded_at ${d.limit}:size${d.addressInEnd}`;
  const window = (key: string, after: string) => {
    const last = key
      .split(', ')
      .map((column) => `${column} DESC`)
      .join(', ');
    return `WITH w AS (SELECT ${key} FROM feed WHERE ${after} ORDER BY ${key} ${d.limit}:size)
    SELECT ${key}, (SELECT count(*) FROM w) AS n FROM w ORDER BY ${last} LIMIT 1`;
  };
  const superseded = (range: string) =>
    `DELETE FROM feed WHERE ${range} AND removed IS NULL AND EXISTS (
      SELECT 1 FROM feed newer WHERE newer.kind = feed.kind AND newer.id = feed.id
      AND newer.pos > feed.pos AND newer.team = feed.team AND newer.recorded_at < :cutoff)`;
  const key = d.windowKey;
  const edge = (which: 'after' | 'end') =>
    key
      .split(', ')
      .map((column) => `:${keyParam(which, column)}`)
      .join(', ');
  return {
    trimRemovals: named(removals('')),
    trimRemovalsTeam: named(removals('team = :team AND ')),
    trimWindow: named(window(key, `(${key}) > (${edge('after')})`)),
    trimWindowTeam: named(window('team, pos', 'team = :team AND pos > :afterPos')),
    trimSuperseded: named(superseded(`(${key}) > (${edge('after')}) AND (${key}) <= (${edge('end')})`)),
    trimSupersededTeam: named(superseded('team = :team AND pos > :afterPos AND pos <= :endPos')),
    /** The columns of `trimWindow`'s key, in order. */
    trimKey: key.split(', '),
  };
}
