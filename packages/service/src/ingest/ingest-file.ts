// Kept whole: files, standard input and --follow share one batch loop and one report; apart, they would drift.
import type { Readable } from 'node:stream';
import type { Clock } from '../clock.js';
import type { Store } from '../store/store.js';
import { Crm } from '../write/events/crm.js';
import type { CrmEvent } from '../write/events/events.js';
import { checkEvent, normaliseEvent, stripContent } from '../write/events/parse-event.js';
import { WriteError } from '../write/events/write-error.js';
import { applyIngestBatch } from '../write/intake/ingest-batch.js';
import { DEFAULT_INGEST_BATCH, DEFAULT_STDIN_LIMIT_MIB } from './ingest-defaults.js';
import { type NumberedLine, ndjsonLines } from './ndjson-lines.js';

/** Validation stops reporting after this many bad lines (the file is rejected at the first). */
const MAX_REPORTED = 20;
const MIB = 1024 * 1024;

export interface LineError {
  line: number;
  field: string;
  message: string;
}

/** What was committed before a failure: every batch before the failing one, and nothing after. */
export interface Committed {
  /** Events committed by the batches before the failing one (duplicates not counted). */
  events: number;
  /** Events of those batches skipped because their id was applied before with the same content. */
  duplicates: number;
  /** Batches (transactions) committed before the failing one. */
  batches: number;
  /** Lines of the batches committed before the failing one (0 when none was). */
  appliedThroughLine: number;
}

export interface LineRange {
  firstLine: number;
  lastLine: number;
}

export type IngestResult =
  | { outcome: 'applied'; lines: number; events: number; duplicates: number; batches: number }
  | { outcome: 'invalid'; errors: LineError[] }
  | (Committed & {
      /** The write side refused an event: the batch holding it was rolled back. */
      outcome: 'write_failed';
      /** The rolled-back batch, by file line numbers. */
      rejected: LineRange;
      /** The line of the event the write side refused, when it says which. */
      line: number | undefined;
      message: string;
    })
  | (Committed & {
      /** Anything else went wrong (database, reading the input, a bug): the report still says what was committed. */
      outcome: 'failed';
      /** The batch being read or written when it happened; undefined when none was. */
      rejected: LineRange | undefined;
      /** The line at fault, when one is (a line that changed since validation). */
      line: number | undefined;
      message: string;
    });

/** Where ingest stands: lines read in the validation pass, then events committed out of `total`. */
export type IngestProgress =
  | { phase: 'validating'; lines: number }
  | { phase: 'applying'; events: number; total: number };

export interface IngestDeps {
  store: Store;
  clock: Clock;
  batchSize?: number;
  /** The source events' ids belong to (default `ingest`): an id applied before is a duplicate. */
  source?: string;
  /** Called after every validated chunk of lines and after every committed batch. */
  onProgress?: (progress: IngestProgress) => void;
}

/** How often (in lines) the validation pass reports and lets the event loop turn. */
const VALIDATION_TICK = 5_000;

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

/** An error's own words, one line, without a stack (driver messages name constraints, not values). */
function describe(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.split('\n')[0]!.slice(0, 300);
}

/** A line of the apply pass: its event (passed `checkEvent`), or why it no longer validates. */
type Entry = { line: number; event: CrmEvent } | { line: number; error: LineError };

/** Up to a batch of events read in order, stopped early by the end of the input or by a line that no longer validates. */
interface Batch {
  events: CrmEvent[];
  lines: number[];
  error?: LineError;
  end: boolean;
  /** Settles when the batch is read; rejects when reading the input failed (`lines` then holds what was read). */
  read: Promise<void>;
}

/**
 * Applies events in input order, in transactions of at most `batchSize` events. A batch the write side
 * refuses is rolled back whole and ingest stops; any other failure stops it too. Either way the result
 * says which batches were committed before it. The next batch is read (and its lines checked) while the
 * current one is written, so that work fills the time spent waiting for the database.
 */
async function applyEntries(
  entries: AsyncIterable<Entry> | Iterable<Entry>,
  total: number,
  deps: IngestDeps,
  follow: { lingerMs: number } | undefined = undefined,
): Promise<IngestResult> {
  const batchSize = deps.batchSize ?? DEFAULT_INGEST_BATCH;
  const crm = new Crm(deps.store, deps.clock);
  const source = deps.source ?? DEFAULT_INGEST_SOURCE;
  const done: Committed = { events: 0, duplicates: 0, batches: 0, appliedThroughLine: 0 };
  const input = (async function* () {
    yield* entries;
  })();
  // Following a stream, a batch also ends `lingerMs` after its first event: the line being awaited then
  // starts the next batch.
  let pending: Promise<IteratorResult<Entry>> | undefined;
  const nextEntry = async (deadline: number | undefined): Promise<IteratorResult<Entry> | 'linger'> => {
    pending ??= input.next();
    let result: IteratorResult<Entry> | 'linger';
    if (deadline === undefined) result = await pending;
    else {
      let timer: NodeJS.Timeout | undefined;
      const linger = new Promise<'linger'>((resolve) => {
        timer = setTimeout(() => resolve('linger'), Math.max(0, deadline - Date.now()));
      });
      result = await Promise.race([pending, linger]).finally(() => clearTimeout(timer));
    }
    if (result !== 'linger') pending = undefined;
    return result;
  };
  const readBatch = (): Batch => {
    const batch: Batch = { events: [], lines: [], end: false, read: Promise.resolve() };
    batch.read = (async () => {
      let deadline: number | undefined;
      while (batch.events.length < batchSize) {
        const next = await nextEntry(deadline);
        if (next === 'linger') return;
        if (follow && deadline === undefined) deadline = Date.now() + follow.lingerMs;
        if (next.done) {
          batch.end = true;
          return;
        }
        if ('error' in next.value) {
          batch.error = next.value.error;
          return;
        }
        // Checked as it was read: put in stored form here, so the write side takes it as is.
        batch.events.push(normaliseEvent(stripContent(next.value.event)));
        batch.lines.push(next.value.line);
      }
    })();
    // Awaited in its turn; a failure while the batch before is written is reported after that one.
    batch.read.catch(() => undefined);
    return batch;
  };
  const range = (batch: Batch): LineRange | undefined =>
    batch.lines.length === 0
      ? undefined
      : { firstLine: batch.lines[0]!, lastLine: batch.lines[batch.lines.length - 1]! };
  let lines = 0;
  let current = readBatch();
  let ahead: Batch | undefined;
  try {
    for (;;) {
      await current.read;
      if (current.error) {
        const { line, field, message } = current.error;
        return { outcome: 'failed', ...done, rejected: range(current), line, message: `field ${field} ${message}` };
      }
      if (current.events.length === 0) break;
      ahead = current.end ? undefined : readBatch();
      if (current.events.some((event) => event.id !== undefined)) {
        const applied = await applyIngestBatch(deps.store, deps.clock, { source, events: current.events });
        done.events += applied.applied;
        done.duplicates += applied.duplicates;
      } else {
        await crm.applyBatch(current.events, { checked: true });
        done.events += current.events.length;
      }
      done.batches += 1;
      done.appliedThroughLine = current.lines[current.lines.length - 1]!;
      lines += current.events.length;
      if (deps.onProgress) {
        deps.onProgress({ phase: 'applying', events: done.events, total });
        // SQLite commits synchronously: give a progress timer (and Ctrl+C) a turn between batches.
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (!ahead) break;
      current = ahead;
      ahead = undefined;
    }
  } catch (error) {
    if (error instanceof WriteError) {
      const line = error.index === undefined ? undefined : current.lines[error.index];
      // The write side prefixes "event N: " (its index in the batch); the line number says it better.
      const message = error.message.replace(/^event \d+: /, '');
      return { outcome: 'write_failed', ...done, rejected: range(current)!, line, message };
    }
    return { outcome: 'failed', ...done, rejected: range(current), line: undefined, message: describe(error) };
  } finally {
    // Stopped early: let the batch read ahead settle, then close the input (a file is closed). A stream
    // followed may never send another line: its reader closes it (cli/ingest-command.ts).
    if (!follow) {
      await ahead?.read.catch(() => undefined);
      await input.return(undefined);
    }
  }
  return { outcome: 'applied', lines, events: done.events, duplicates: done.duplicates, batches: done.batches };
}

/** A failure before anything was committed (reading the input during validation). */
function failedBeforeApply(error: unknown): IngestResult {
  const none = { events: 0, duplicates: 0, batches: 0, appliedThroughLine: 0 };
  return { outcome: 'failed', ...none, rejected: undefined, line: undefined, message: describe(error) };
}

/**
 * Ingests an NDJSON file of events in two passes over the file, so memory stays flat:
 * 1. every line is validated; one bad line rejects the whole file and nothing is applied;
 * 2. the events are applied in file order (see `applyEntries`), each line validated again because the
 *    file could have changed since the first pass.
 */
export async function ingestFile(path: string, deps: IngestDeps): Promise<IngestResult> {
  const errors: LineError[] = [];
  let total = 0;
  try {
    for await (const entry of ndjsonLines(path)) {
      total += 1;
      if (total % VALIDATION_TICK === 0) deps.onProgress?.({ phase: 'validating', lines: total });
      const result = check(entry);
      if (!result.ok) {
        errors.push(result.error);
        if (errors.length >= MAX_REPORTED) break;
      }
    }
  } catch (error) {
    return failedBeforeApply(error);
  }
  if (errors.length > 0) return { outcome: 'invalid', errors };
  deps.onProgress?.({ phase: 'validating', lines: total });
  async function* entries(): AsyncGenerator<Entry> {
    for await (const entry of ndjsonLines(path)) {
      const result = check(entry);
      yield result.ok ? { line: entry.line, event: result.event } : { line: entry.line, error: result.error };
    }
  }
  return applyEntries(entries(), total, deps);
}

/**
 * Ingests NDJSON read once from a stream (standard input) without writing it anywhere: one pass
 * validates every line and keeps each valid event, content dropped, as compact JSON in memory; past
 * `limitBytes` of kept events the input is refused (nothing applied). Then the kept events are applied
 * as `ingestFile` applies a file's.
 */
export async function ingestStream(input: Readable, deps: IngestDeps & { limitBytes?: number }): Promise<IngestResult> {
  const limit = deps.limitBytes ?? DEFAULT_STDIN_LIMIT_MIB * MIB;
  const errors: LineError[] = [];
  const kept: string[] = [];
  const keptLines: number[] = [];
  let bytes = 0;
  try {
    for await (const entry of ndjsonLines(input)) {
      if (entry.line % VALIDATION_TICK === 0) deps.onProgress?.({ phase: 'validating', lines: entry.line });
      const result = check(entry);
      if (!result.ok) {
        errors.push(result.error);
        if (errors.length >= MAX_REPORTED) break;
        continue;
      }
      if (errors.length > 0) continue;
      const json = JSON.stringify(stripContent(result.event));
      bytes += Buffer.byteLength(json);
      if (bytes > limit) {
        const size = limit % MIB === 0 ? `${limit / MIB} MiB` : `${limit} bytes`;
        const message = `holds more than ${size} of events once content is dropped (the limit for standard input); ingest it from a file, or raise --stdin-limit`;
        return { outcome: 'invalid', errors: [{ line: entry.line, field: '(input)', message }] };
      }
      kept.push(json);
      keptLines.push(entry.line);
    }
  } catch (error) {
    return failedBeforeApply(error);
  }
  if (errors.length > 0) return { outcome: 'invalid', errors };
  deps.onProgress?.({ phase: 'validating', lines: keptLines[keptLines.length - 1] ?? 0 });
  function* entries(): Generator<Entry> {
    for (const [index, json] of kept.entries()) {
      // Let go of each line once it is in a batch.
      kept[index] = '';
      yield { line: keptLines[index]!, event: JSON.parse(json) as CrmEvent };
    }
  }
  return applyEntries(entries(), kept.length, deps);
}

/** The source of an ingest's event ids unless `--source` names another. */
export const DEFAULT_INGEST_SOURCE = 'ingest';

/** A line followed from a stream: its event, which must carry an id, or why it is refused. */
function checkFollowed(entry: NumberedLine): Entry {
  const result = check(entry);
  if (!result.ok) return { line: entry.line, error: result.error };
  if (result.event.id === undefined)
    return {
      line: entry.line,
      error: { line: entry.line, field: 'id', message: 'is required on every event of a followed stream (--follow)' },
    };
  return { line: entry.line, event: result.event };
}

/**
 * Follows a stream that may never end (`ingest - --follow`): each line is checked as it comes and its
 * event applied in a batch that commits when it holds `batchSize` events or `lingerMs` after its first
 * event, whichever comes first. Every event must carry an id, so sending a line again after a failure
 * applies nothing twice. A line that does not validate stops it: the batches before it stay committed
 * and the report names the line.
 */
export async function ingestFollow(input: Readable, deps: IngestDeps & { lingerMs: number }): Promise<IngestResult> {
  async function* entries(): AsyncGenerator<Entry> {
    for await (const entry of ndjsonLines(input)) yield checkFollowed(entry);
  }
  try {
    return await applyEntries(entries(), 0, deps, { lingerMs: deps.lingerMs });
  } catch (error) {
    return failedBeforeApply(error);
  }
}
