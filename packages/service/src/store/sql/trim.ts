import { TRIM_BATCH_ROWS, type TrimBatch, type TrimOptions } from '../trim-options.js';
import { asNumber, type Row } from './rows.js';
import type { Statements } from './statements.js';
import { keyParam, type TrimParams } from './trim-statements.js';

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
  // The team's own statements when one team is trimmed; its name is bound wherever `:team` stands.
  const scope: TrimParams = team === undefined ? {} : { team };
  if (removalsBefore !== null) {
    const removals = team === undefined ? sql.trimRemovals : sql.trimRemovalsTeam;
    const params = { ...scope, cutoff: removalsBefore, size };
    for (;;) {
      const { changes } = await batch((run) => run(removals.text, removals.values(params)));
      if (!report('removals', changes, changes)) break;
    }
    if (options.signal?.aborted) return dropped;
  }
  // The key of the last row looked at: a team's entries by position, the whole feed by the dialect's key.
  const columns = team === undefined ? sql.trimKey : ['pos'];
  const edge = (which: 'after' | 'end', key: unknown[]) =>
    Object.fromEntries(columns.map((column, i) => [keyParam(which, column), key[i]]));
  const window = team === undefined ? sql.trimWindow : sql.trimWindowTeam;
  const superseded = team === undefined ? sql.trimSuperseded : sql.trimSupersededTeam;
  let after: unknown[] = columns.map((column) => (column === 'team' ? '' : 0));
  for (;;) {
    const done = await batch(async (run) => {
      const [last] = (await run(window.text, window.values({ ...scope, ...edge('after', after), size }))).rows;
      if (!last) return { examined: 0, deleted: 0 };
      const end = columns.map((column) => (column === 'team' ? last[column] : asNumber(last[column])));
      const params = { ...scope, ...edge('after', after), ...edge('end', end), cutoff: supersededBefore };
      const { changes } = await run(superseded.text, superseded.values(params));
      after = end;
      return { examined: asNumber(last.n), deleted: changes };
    });
    if (!report('superseded', done.examined, done.deleted)) break;
  }
  return dropped;
}
