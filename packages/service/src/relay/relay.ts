import { setTimeout as wait } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { EventResult, IntakeClient, PostOutcome } from './intake-client.js';
import { type Outbox, OutboxError, type OutboxRow } from './outbox.js';
import type { RelayMetrics } from './relay-metrics.js';

// `crm-export relay` (docs/intake.md, "The relay"): reads the CRM's outbox in id order and posts it to the
// intake endpoint, one batch after the other. The position is the service's: read from it at the start and
// after a 409, moved only by a 200. Nothing is kept on this side, so a killed relay resumes where the
// service is.

export interface RelayOptions {
  outbox: Outbox;
  intake: IntakeClient;
  source: string;
  /** Rows per post at most. */
  batch: number;
  pollIntervalMs: number;
  maxBackoffMs: number;
  /** Relay the rows there now, then return. */
  once: boolean;
  logger: Logger;
  metrics: RelayMetrics;
  /** Aborted to stop after the post at hand. */
  signal: AbortSignal;
}

/** The first wait after a failure; each further failure in a row doubles it, up to `maxBackoffMs`. */
const FIRST_BACKOFF_MS = 100;
/** Longest a `Retry-After` is honoured. */
const MAX_RETRY_AFTER_MS = 600_000;
/** Lag is measured at most this often. */
const LAG_EVERY_MS = 1000;
/** A lag line is logged at most this often. */
const LAG_LOG_EVERY_MS = 30_000;

/**
 * How long to wait after `failures` failures in a row: a random time between half and all of the doubled
 * wait (so relays that failed together do not come back together), and never less than `Retry-After`.
 */
export function backoffMs(failures: number, maxMs: number, retryAfter?: number, random = Math.random): number {
  const ceiling = Math.min(maxMs, FIRST_BACKOFF_MS * 2 ** Math.min(30, Math.max(0, failures - 1)));
  const jittered = ceiling / 2 + random() * (ceiling / 2);
  if (retryAfter === undefined) return Math.round(jittered);
  const floor = Math.min(retryAfter, MAX_RETRY_AFTER_MS);
  return Math.round(floor + random() * Math.min(1000, floor / 4 + FIRST_BACKOFF_MS));
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return wait(ms, undefined, { signal }).catch(() => undefined);
}

/** The event as posted: the outbox row's id is its `seq`. */
function wireEvent(row: OutboxRow): unknown {
  if (row.event === null || typeof row.event !== 'object' || Array.isArray(row.event)) return row.event;
  // `seq` first, and never one the stored event may carry.
  return Object.assign({ seq: row.id }, row.event, { seq: row.id });
}

function tally(results: readonly EventResult[]): Record<EventResult['outcome'], number> {
  const counts = { applied: 0, duplicate: 0, quarantined: 0, rejected: 0 };
  for (const result of results) if (result.outcome in counts) counts[result.outcome] += 1;
  return counts;
}

/** Runs the relay until `signal` aborts (exit code 0), `once` is done (0), or the service refuses the token (1). */
export async function runRelay(options: RelayOptions): Promise<number> {
  const { outbox, intake, source, logger, metrics, signal } = options;
  let failures = 0;
  /** Waits before the next attempt after a failure; `reason` goes to the log. */
  const backOff = async (reason: string, retryAfter?: number) => {
    failures += 1;
    const wait = backoffMs(failures, options.maxBackoffMs, retryAfter);
    logger.warn({ source, reason, attempt: failures, wait_ms: wait }, 'relay waits before trying again');
    await sleep(wait, signal);
  };

  // The outbox must be one the relay can read without skipping rows.
  for (;;) {
    if (signal.aborted) return 0;
    try {
      await outbox.check();
      break;
    } catch (error) {
      if (error instanceof OutboxError) {
        logger.error({ source, reason: error.message }, 'relay cannot use the outbox table');
        return 1;
      }
      await backOff(`outbox: ${(error as Error).message}`);
    }
  }
  failures = 0;

  /** The service's last applied seq of the source, asked until it answers. */
  const resume = async (): Promise<number | undefined> => {
    for (;;) {
      if (signal.aborted) return undefined;
      const answer = await intake.lastSeq(source);
      if (typeof answer === 'number') {
        failures = 0;
        return answer;
      }
      if (answer.kind === 'unauthorized') {
        metrics.posts.inc({ result: 'unauthorized' });
        logger.error({ source, status: answer.status, code: answer.code }, 'the service refuses the intake token');
        return undefined;
      }
      if (answer.kind === 'retry') await backOff(answer.reason, answer.retryAfterMs);
      else await backOff(`${answer.status} ${answer.code}`);
    }
  };

  const started = await resume();
  if (started === undefined) return signal.aborted ? 0 : 1;
  let position = started;
  metrics.position.set(position);
  logger.info({ source, position, once: options.once }, 'relay started');

  let upTo = Number.MAX_SAFE_INTEGER;
  if (options.once) {
    for (;;) {
      try {
        upTo = await outbox.settle((ms) => sleep(ms, signal), options.pollIntervalMs);
        break;
      } catch (error) {
        if (signal.aborted) return 0;
        await backOff(`outbox: ${(error as Error).message}`);
      }
    }
  }

  let limit = options.batch;
  let lagAt = 0;
  let lagLoggedAt = Date.now();
  /** False when the outbox's ids went back below the position (a restored CRM database). */
  const measureLag = async (force = false): Promise<boolean> => {
    const now = Date.now();
    if (!force && now - lagAt < LAG_EVERY_MS) return true;
    lagAt = now;
    try {
      const lag = await outbox.lag(position);
      if (lag.lastId < position) {
        // New rows would take ids the service already holds, below the position: never read, never sent.
        logger.error(
          { source, position, outbox_last_id: lag.lastId },
          "the outbox's ids are behind the service's last_seq (was the CRM's database restored?): see docs/intake.md, \"After the CRM restores its own database\"",
        );
        return false;
      }
      metrics.lagRows.set(lag.rows);
      metrics.lagSeconds.set(lag.seconds);
      if (now - lagLoggedAt >= LAG_LOG_EVERY_MS) {
        lagLoggedAt = now;
        logger.info({ source, position, lag_rows: lag.rows, lag_seconds: lag.seconds }, 'relay lag');
      }
    } catch {
      // The next read reports the database's state.
    }
    return true;
  };

  while (!signal.aborted) {
    let rows: OutboxRow[];
    try {
      rows = await outbox.read(position, limit, upTo);
    } catch (error) {
      await backOff(`outbox: ${(error as Error).message}`);
      continue;
    }
    if (!(await measureLag())) return 1;
    if (rows.length === 0) {
      if (options.once) {
        await measureLag(true);
        logger.info({ source, position }, 'relay caught up (--once)');
        return 0;
      }
      await sleep(options.pollIntervalMs, signal);
      continue;
    }
    const outcome: PostOutcome = await intake.post({ source, follows: position, events: rows.map(wireEvent) });
    metrics.posts.inc({ result: outcome.kind });
    switch (outcome.kind) {
      case 'committed': {
        failures = 0;
        limit = options.batch;
        metrics.blocked.set(0);
        const counts = tally(outcome.results);
        for (const [name, n] of Object.entries(counts)) if (n > 0) metrics.events.inc({ outcome: name }, n);
        for (const result of outcome.results) {
          if (result.outcome === 'rejected' || result.outcome === 'quarantined') {
            logger.warn({ source, seq: result.seq, outcome: result.outcome, code: result.code, field: result.field });
          }
        }
        const last = rows[rows.length - 1]!.id;
        if (outcome.lastSeq < last) {
          logger.warn({ source, sent_through: last, last_seq: outcome.lastSeq }, 'the service answered a lower seq');
        }
        position = outcome.lastSeq;
        metrics.position.set(position);
        logger.info({ source, first_seq: rows[0]!.id, last_seq: last, ...counts }, 'relayed');
        break;
      }
      case 'gap':
        // The service applied less (or more) than this relay thought: go on from what it holds.
        logger.warn({ source, follows: position, last_seq: outcome.lastSeq }, 'sequence gap: resending from last_seq');
        position = outcome.lastSeq;
        metrics.position.set(position);
        break;
      case 'retry':
        await backOff(outcome.reason, outcome.retryAfterMs);
        break;
      case 'unauthorized':
        logger.error({ source, status: outcome.status, code: outcome.code }, 'the service refuses the intake token');
        return 1;
      case 'refused': {
        if ((outcome.code === 'too_many_events' || outcome.code === 'body_too_large') && rows.length > 1) {
          limit = Math.max(1, Math.floor(rows.length / 2));
          logger.warn({ source, code: outcome.code, batch: limit }, 'batch too large: sending fewer rows');
          break;
        }
        if (outcome.index !== undefined && outcome.index > 0 && outcome.index < rows.length) {
          // Send what comes before the event at fault; the next post starts with it.
          limit = outcome.index;
          break;
        }
        const at = rows[outcome.index ?? 0]?.id ?? rows[0]!.id;
        metrics.blocked.set(1);
        logger.error(
          { source, seq: at, status: outcome.status, code: outcome.code, param: outcome.param },
          'the service refuses this outbox row: fix or replace it in the outbox; the relay tries again',
        );
        if (options.once) return 1;
        failures = Math.max(failures, 30);
        await backOff(`${outcome.status} ${outcome.code}`);
        break;
      }
    }
  }
  return 0;
}
