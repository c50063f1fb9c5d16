import type { Clock } from '../clock.js';
import type { Limits } from '../limits.js';
import type { Store, TrimOptions } from '../store/store.js';
import { capturePending } from '../write/commands/capture.js';
import { runCommand } from '../write/commands/commands.js';
import { INTAKE_ID_RETENTION_MS } from '../write/intake/intake-defaults.js';

// The feed's background jobs, run by `serve`: capture of teams a key newly names, and retention.
// Both are safe to run from several processes at once (capture checks `capturedAt` inside its last
// transaction; trimming deletes by age), so every server process may run them.

export type RetentionLimits = Pick<
  Limits,
  'removalRetentionMs' | 'supersededRetentionMs' | 'requestLogRetentionMs' | 'requestLogRowsPerIntegration'
>;

/**
 * Retention once: drops removals older than 45 days and entries superseded for a day, in bounded batches
 * (docs/feed.md). Returns rows dropped.
 */
export async function trimFeedOnce(
  store: Store,
  clock: Clock,
  limits: RetentionLimits,
  options: TrimOptions = {},
): Promise<number> {
  const now = clock.now();
  return runCommand(store, 'feed.trim', {
    ...options,
    removalsBefore: now - limits.removalRetentionMs,
    supersededBefore: now - limits.supersededRetentionMs,
  });
}

/**
 * Retention of the request log and the usage counts (docs/request-log.md): rows older than
 * `requestLogRetentionMs`, then each integration's oldest rows beyond `requestLogRowsPerIntegration`. Rows dropped.
 */
export async function trimUsageOnce(
  store: Store,
  clock: Clock,
  limits: RetentionLimits,
  options: { signal?: AbortSignal } = {},
): Promise<number> {
  const before = clock.now() - limits.requestLogRetentionMs;
  return runCommand(store, 'usage.trim', {
    logBefore: before,
    countsBefore: before,
    rowsPerIntegration: limits.requestLogRowsPerIntegration,
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/** Retention of the intake's applied ids (docs/ingest.md): ids applied more than 7 days ago. Rows dropped. */
export async function trimIntakeIdsOnce(store: Store, clock: Clock): Promise<number> {
  return runCommand(store, 'intake.trim_ids', { before: clock.now() - INTAKE_ID_RETENTION_MS });
}

export interface FeedJobsOptions {
  store: Store;
  clock: Clock;
  limits: RetentionLimits;
  /** How often pending teams are prepared, ms (default 3 s). */
  captureEveryMs?: number;
  /** How often retention runs, ms (default 10 minutes). */
  trimEveryMs?: number;
  /** When retention first runs after start, ms (default `FIRST_TRIM_AFTER_MS`). */
  firstTrimAfterMs?: number;
  /** Called with a job's failure; the job runs again at its next tick. */
  onError?: (job: 'capture' | 'retention', error: unknown) => void;
}

/**
 * Retention's first run waits this long after start: on a large feed its batches would otherwise share the
 * first seconds with start-up and the first requests (docs/performance.md, "Start").
 */
export const FIRST_TRIM_AFTER_MS = 5_000;

/**
 * Starts both jobs (capture at once, retention after `firstTrimAfterMs`, then every `trimEveryMs`); the returned
 * function stops them and waits for a running one.
 */
export function startFeedJobs(options: FeedJobsOptions): () => Promise<void> {
  const { store, clock, limits } = options;
  const running = new Set<Promise<unknown>>();
  let stopped = false;
  // Stopping ends a running retention after its current batch instead of waiting for the whole feed.
  const stopping = new AbortController();
  const busy = { capture: false, retention: false };

  const run = (job: 'capture' | 'retention', work: () => Promise<unknown>) => {
    // One run of a job at a time: a slow capture must not pile up behind itself.
    if (stopped || busy[job]) return;
    busy[job] = true;
    const p = work()
      .catch((error: unknown) => options.onError?.(job, error))
      .finally(() => {
        busy[job] = false;
        running.delete(p);
      });
    running.add(p);
  };
  const capture = () => run('capture', () => capturePending(store, clock));
  const retention = () =>
    run('retention', async () => {
      await trimFeedOnce(store, clock, limits, { signal: stopping.signal });
      await trimUsageOnce(store, clock, limits, { signal: stopping.signal });
      await trimIntakeIdsOnce(store, clock);
    });

  const captureTimer = setInterval(capture, options.captureEveryMs ?? 3_000);
  const trimTimer = setInterval(retention, options.trimEveryMs ?? 10 * 60_000);
  const firstTrimAfterMs = options.firstTrimAfterMs ?? FIRST_TRIM_AFTER_MS;
  const firstTrim = firstTrimAfterMs > 0 ? setTimeout(retention, firstTrimAfterMs) : undefined;
  captureTimer.unref();
  trimTimer.unref();
  firstTrim?.unref();
  capture();
  if (!firstTrim) retention();

  return async () => {
    stopped = true;
    stopping.abort();
    clearInterval(captureTimer);
    clearInterval(trimTimer);
    clearTimeout(firstTrim);
    await Promise.all([...running]);
  };
}
