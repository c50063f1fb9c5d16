import type { Clock } from '../clock.js';
import type { Store } from '../store/store.js';
import { Crm } from '../write/crm.js';
import { type CrmEvent, checkEvent } from '../write/events.js';
import { WriteError } from '../write/write-error.js';
import { DEFAULT_INGEST_BATCH } from './ingest-defaults.js';
import { type NumberedLine, ndjsonLines } from './ndjson-lines.js';

/** Validation stops reporting after this many bad lines (the file is rejected at the first). */
const MAX_REPORTED = 20;

export interface LineError {
  line: number;
  field: string;
  message: string;
}

export type IngestResult =
  | { outcome: 'applied'; lines: number; events: number; batches: number }
  | { outcome: 'invalid'; errors: LineError[] }
  | {
      outcome: 'write_failed';
      /** Events committed by the batches before the failing one. */
      events: number;
      /** Lines of the batches committed before the failing one (0 when none was). */
      appliedThroughLine: number;
      /** The rolled-back batch, by file line numbers. */
      rejected: { firstLine: number; lastLine: number };
      /** The line of the event the write side refused, when it says which. */
      line: number | undefined;
      message: string;
    };

function check(entry: NumberedLine): { ok: true; event: CrmEvent } | { ok: false; error: LineError } {
  let value: unknown;
  try {
    value = JSON.parse(entry.text);
  } catch {
    return { ok: false, error: { line: entry.line, field: '(line)', message: 'is not valid JSON' } };
  }
  const result = checkEvent(value);
  if (result.ok) return { ok: true, event: result.event };
  return { ok: false, error: { line: entry.line, field: result.field, message: result.message } };
}

/**
 * Ingests an NDJSON file of events in two passes over the file, so memory stays flat:
 * 1. every line is validated; one bad line rejects the whole file and nothing is applied;
 * 2. the events are applied in file order, in transactions of at most `batchSize` events. A batch
 *    the write side refuses is rolled back whole and ingest stops; the batches before it stay
 *    committed and the result says through which line.
 */
export async function ingestFile(
  path: string,
  deps: { store: Store; clock: Clock; batchSize?: number },
): Promise<IngestResult> {
  const batchSize = deps.batchSize ?? DEFAULT_INGEST_BATCH;
  const errors: LineError[] = [];
  for await (const entry of ndjsonLines(path)) {
    const result = check(entry);
    if (!result.ok) {
      errors.push(result.error);
      if (errors.length >= MAX_REPORTED) break;
    }
  }
  if (errors.length > 0) return { outcome: 'invalid', errors };

  const crm = new Crm(deps.store, deps.clock);
  let lines = 0;
  let events = 0;
  let batches = 0;
  let appliedThroughLine = 0;
  let batch: CrmEvent[] = [];
  let batchLines: number[] = [];
  const flush = async (): Promise<IngestResult | undefined> => {
    if (batch.length === 0) return undefined;
    const rejected = { firstLine: batchLines[0]!, lastLine: batchLines[batchLines.length - 1]! };
    try {
      await crm.applyBatch(batch);
    } catch (error) {
      if (!(error instanceof WriteError)) throw error;
      const line = error.index === undefined ? undefined : batchLines[error.index];
      // The write side prefixes "event N: " (its index in the batch); the line number says it better.
      const message = error.message.replace(/^event \d+: /, '');
      return { outcome: 'write_failed', events, appliedThroughLine, rejected, line, message };
    }
    events += batch.length;
    batches += 1;
    appliedThroughLine = rejected.lastLine;
    batch = [];
    batchLines = [];
    return undefined;
  };
  for await (const entry of ndjsonLines(path)) {
    // Validated again: the file could have changed since the first pass.
    const result = check(entry);
    if (!result.ok) return { outcome: 'invalid', errors: [result.error] };
    batch.push(result.event);
    batchLines.push(entry.line);
    lines += 1;
    if (batch.length >= batchSize) {
      const failed = await flush();
      if (failed) return failed;
    }
  }
  const failed = await flush();
  if (failed) return failed;
  return { outcome: 'applied', lines, events, batches };
}
