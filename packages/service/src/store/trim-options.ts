// Retention (`Store.trimFeed(removalsBefore, supersededBefore, options)`): drops removal entries recorded
// before `removalsBefore` (none when null) and record entries superseded by a newer entry of the same record
// recorded before `supersededBefore` (epoch ms; `ANY_AGE`: every superseded entry). It works in bounded
// batches, each its own short transaction, so other work runs between them (docs/feed.md).

/** Rows a retention batch deletes (removals) or examines (superseded entries) at most. */
export const TRIM_BATCH_ROWS = 1000;

/** One retention statement's work, reported to `TrimOptions.onBatch`. */
export interface TrimBatch {
  /** `removals`: expired removal entries; `superseded`: entries with a newer entry of the same record. */
  rule: 'removals' | 'superseded';
  /** Rows the batch looked at: for removals the rows it selected, for superseded entries its window. */
  examined: number;
  deleted: number;
}

export interface TrimOptions {
  /** Rows per batch (default `TRIM_BATCH_ROWS`). */
  batchSize?: number;
  /** Called after each batch (tests, logs). */
  onBatch?: (batch: TrimBatch) => void;
  /** Stops between batches once aborted (server shutdown); what was deleted stays deleted. */
  signal?: AbortSignal;
  /** Only this team's entries (the demo's compaction of feeds nobody has read); default every team. */
  team?: string;
}

/** A `trimFeed` cutoff later than every entry: superseded entries go whatever their age. */
export const ANY_AGE = Number.MAX_SAFE_INTEGER;
