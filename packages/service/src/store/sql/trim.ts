import { TRIM_BATCH_ROWS, type TrimBatch, type TrimOptions } from '../trim-options.js';
import { asNumber, type Row } from './rows.js';
import type { Statements } from './statements.js';

/** Runs one statement: the rows it returns, or how many it changed. */
export type RunStatement = (text: string, values: unknown[]) => Promise<{ rows: Row[]; changes: number }>;

/** Runs one batch's statements in one short transaction (SQLite), or each on its own (PostgreSQL). */
export type RunBatch = <T>(work: (run: RunStatement) => Promise<T>) => Promise<T>;

/**
 * `Store.trimFeed` on either backend: bounded batches (statements.ts), so no lock or snapshot is held
 * across the feed and other work runs between them. Expired removals first, then superseded entries,
 * window by window in key order; survivors are not looked at again in this run.
 */
export async function trimInBatches(
  sql: Statements,
  batch: RunBatch,
  removalsBefore: number | null,
  supersededBefore: number,
  options: TrimOptions,
): Promise<number> {
  const size = options.batchSize ?? TRIM_BATCH_ROWS;
  const { team } = options;
  let dropped = 0;
  const report = (rule: TrimBatch['rule'], examined: number, deleted: number) => {
    dropped += deleted;
    options.onBatch?.({ rule, examined, deleted });
    return examined === size && !options.signal?.aborted;
  };
  if (removalsBefore !== null) {
    const [text, scope] = team === undefined ? [sql.trimRemovals, []] : [sql.trimRemovalsTeam, [team]];
    for (;;) {
      const { changes } = await batch((run) => run(text, [...scope, removalsBefore, size]));
      if (!report('removals', changes, changes)) break;
    }
    if (options.signal?.aborted) return dropped;
  }
  // The key of the last row looked at: a team's entries by position, the whole feed by the dialect's key.
  const columns = team === undefined ? sql.trimKey : ['pos'];
  let after: unknown[] = columns.map((column) => (column === 'team' ? '' : 0));
  for (;;) {
    const done = await batch(async (run) => {
      const scope = team === undefined ? [] : [team];
      const window = team === undefined ? sql.trimWindow : sql.trimWindowTeam;
      const [last] = (await run(window, [...scope, ...after, size])).rows;
      if (!last) return { examined: 0, deleted: 0 };
      const end = columns.map((column) => (column === 'team' ? last[column] : asNumber(last[column])));
      const superseded = team === undefined ? sql.trimSuperseded : sql.trimSupersededTeam;
      const { changes } = await run(superseded, [...scope, ...after, ...end, supersededBefore]);
      after = end;
      return { examined: asNumber(last.n), deleted: changes };
    });
    if (!report('superseded', done.examined, done.deleted)) break;
  }
  return dropped;
}
