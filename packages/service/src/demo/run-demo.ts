import { performance } from 'node:perf_hooks';
import cliProgress from 'cli-progress';
import { type Clock, systemClock } from '../clock.js';
import type { Store } from '../store/store.js';
import { type ApplyOptions, Crm } from '../write/events/crm.js';
import type { CrmEvent } from '../write/events/events.js';
import { DEMO_BATCH } from './demo-defaults.js';
import { type CompactedUpTo, compactUnreadFeeds } from './demo-feed-compaction.js';
import { type DemoOptions, demoEvents } from './demo-generator.js';

export interface DemoResult {
  teams: string[];
  /** Leads generated over every team (merged duplicates and transfer copies not counted). */
  leads: number;
  events: number;
  seconds: number;
  leadsPerSecond: number;
}

export interface RunDemoOptions extends DemoOptions {
  /** Records when each version was written (not the business times, which the seed fixes). */
  clock?: Clock;
  batchSize?: number;
  /** Drops superseded feed entries of the new teams as it goes (default true; see demo-feed-compaction.ts). */
  compactFeed?: boolean;
  /**
   * Rewrites the tables compactly after the demo when the database held no feed before it (default true):
   * a new database, which nothing serves yet (`Store.reclaimSpace`).
   */
  reclaimSpace?: boolean;
  /** Draws a progress bar on this stream (standard error in the command); none when omitted. */
  progress?: NodeJS.WritableStream;
}

/**
 * The generator builds its events in stored form, valid and without content (test/demo checks every
 * story's events), so the write side neither checks nor copies them again.
 */
const STORED_FORM: ApplyOptions = { checked: true };

/** Generates the demo and applies it through the write side, in transactions of `batchSize` events. */
export async function runDemo(store: Store, options: RunDemoOptions): Promise<DemoResult> {
  const compactFeed = options.compactFeed ?? true;
  // Entries a batch supersedes itself are never written; those of earlier batches are trimmed after each.
  const crm = new Crm(store, options.clock ?? systemClock, { dropSupersededOfUnreadTeams: compactFeed });
  const batchSize = options.batchSize ?? DEMO_BATCH;
  const total = options.leads * options.teams;
  const bar = options.progress
    ? new cliProgress.SingleBar(
        {
          stream: options.progress,
          // Off a terminal (CI, pipes) it still prints a line now and then instead of nothing.
          noTTYOutput: true,
          notTTYSchedule: 5000,
          etaBuffer: 50,
          format: 'demo data [{bar}] {percentage}% | {value}/{total} leads | ETA {eta_formatted}',
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  bar?.start(total, 0);

  const teams: string[] = [];
  const started = performance.now();
  const fresh = (options.reclaimSpace ?? true) && (await store.feedHeadTimes()).length === 0;
  let batch: CrmEvent[] = [];
  let events = 0;
  let leads = 0;
  const compacted: CompactedUpTo = new Map();
  try {
    for (const chunk of demoEvents(options)) {
      for (const event of chunk.events) {
        if (event.type === 'team.upsert') teams.push(event.team);
        batch.push(event);
      }
      leads += chunk.leads;
      if (batch.length >= batchSize) {
        await crm.applyBatch(batch, STORED_FORM);
        events += batch.length;
        batch = [];
        // As it goes, so the space is reused instead of growing the file.
        if (compactFeed) await compactUnreadFeeds(store, teams, compacted);
        bar?.update(leads);
        // SQLite calls are synchronous: without a turn of the event loop neither the progress timer
        // nor a Ctrl+C handler would run until the end.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    if (batch.length > 0) {
      await crm.applyBatch(batch, STORED_FORM);
      events += batch.length;
    }
    if (compactFeed) await compactUnreadFeeds(store, teams, compacted);
    // Rows replaced and entries dropped along the way leave free space in pages and, on PostgreSQL, dead rows.
    if (fresh) await store.reclaimSpace?.();
    bar?.update(leads);
  } finally {
    bar?.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  return { teams, leads, events, seconds, leadsPerSecond: seconds > 0 ? leads / seconds : leads };
}
