import { TRIM_BATCH_ROWS, type TrimBatch, type TrimOptions } from '../store.js';
import { asNumber, type Row } from './rows.js';
import type { Statements } from './statements.js';

/** Runs one statement in its own short transaction: the rows it returns, or how many it changed. */
export type RunStatement = (text: string, values: unknown[]) => Promise<{ rows: Row[]; changes: number }>;

/**
 * `Store.trimFeed` on either backend: batches of one bounded statement each (statements.ts), so no lock or
 * snapshot is held across the feed and other work runs between them. Expired removals first, then
 * superseded entries, window by window in key order; survivors are not looked at again in this run.
 */
export async function trimInBatches(
  sql: Statements,
  run: RunStatement,
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
      const { changes } = await run(text, [...scope, removalsBefore, size]);
      if (!report('removals', changes, changes)) break;
    }
    if (options.signal?.aborted) return dropped;
  }
  let after = { team: team ?? '', pos: 0 };
  for (;;) {
    const window = team === undefined ? sql.trimWindow : sql.trimWindowTeam;
    const [last] = (await run(window, [after.team, after.pos, size])).rows;
    if (!last) {
      report('superseded', 0, 0);
      break;
    }
    const end = { team: last.team as string, pos: asNumber(last.pos) };
    const { changes } =
      team === undefined
        ? await run(sql.trimSuperseded, [after.team, after.pos, end.team, end.pos, supersededBefore])
        : await run(sql.trimSupersededTeam, [team, after.pos, end.pos, supersededBefore]);
    after = end;
    if (!report('superseded', asNumber(last.n), changes)) break;
  }
  return dropped;
}
