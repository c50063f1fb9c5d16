import type { Command } from 'commander';
import { systemClock } from '../clock.js';
import type { IngestResult } from '../ingest/ingest-file.js';
import { settingOption } from '../settings/read-setting.js';
import { SOURCE_PATTERN } from '../write/intake/apply-intake.js';
import { ingestProgress } from './ingest-progress.js';
import { openDb } from './options.js';
import { jsonText, printable } from './terminal-text.js';

export function registerIngestCommand(program: Command): void {
  program
    .command('ingest')
    .description('apply CRM events from an NDJSON file (one event per line; "-" reads standard input)')
    .argument('<file>', 'NDJSON file, or - for standard input')
    .addOption(settingOption('db', 'database to write to, created and migrated when missing'))
    .addOption(settingOption('ingestBatchSize'))
    .addOption(settingOption('ingestStdinLimit'))
    .option('--json', 'print the outcome as one JSON object on standard output (exit codes unchanged)')
    .option('--source <name>', 'the source event ids belong to: an id applied before is a duplicate', 'ingest')
    .option('--follow', 'with "-": follow an endless stream of events with ids, committing batch by batch')
    .option('--linger <ms>', 'with --follow: commit a batch this long after its first event', '200')
    .action(async (file: string, opts: IngestOptions) => {
      const { ingestFile, ingestFollow, ingestStream } = await import('../ingest/ingest-file.js');
      const wrong = checkOptions(file, opts);
      if (wrong) {
        process.stderr.write(`crm-export ingest: ${wrong}\n`);
        process.exitCode = 1;
        return;
      }
      const store = await openDb(opts.db, { create: true });
      const name = file === '-' ? 'stdin' : file;
      const progress = ingestProgress(process.stderr, printable(name));
      const started = performance.now();
      try {
        const deps = {
          store,
          clock: systemClock,
          batchSize: opts.batchSize,
          source: opts.source,
          ...(opts.follow ? {} : { onProgress: progress.update }),
        };
        // Standard input is read once and never copied to disk: see docs/ingest.md.
        const result = opts.follow
          ? await ingestFollow(process.stdin, { ...deps, lingerMs: Number(opts.linger) })
          : file === '-'
            ? await ingestStream(process.stdin, { ...deps, limitBytes: opts.stdinLimit * 1024 * 1024 })
            : await ingestFile(file, deps);
        // A followed stream that failed may still be open: stop reading it, so the process can end.
        if (opts.follow) process.stdin.destroy();
        progress.stop();
        const seconds = Math.round(performance.now() - started) / 1000;
        process.exitCode = opts.json ? reportJson(result, name, seconds) : report(result, name);
      } finally {
        progress.stop();
        await store.close();
      }
    });
}

interface IngestOptions {
  db?: string;
  batchSize: number;
  stdinLimit: number;
  json?: boolean;
  source: string;
  follow?: boolean;
  linger: string;
}

/** What is wrong with the options, or undefined. */
function checkOptions(file: string, opts: IngestOptions): string | undefined {
  if (!SOURCE_PATTERN.test(opts.source))
    return '--source must be 1 to 64 of a-z, 0-9, ".", "_" and "-", starting with a letter or digit';
  if (opts.follow && file !== '-') return '--follow reads standard input: pass "-" as the file';
  const linger = Number(opts.linger);
  if (!Number.isInteger(linger) || linger < 1 || linger > 60_000)
    return '--linger must be a whole number of milliseconds from 1 to 60000';
  return undefined;
}

const EXIT_CODES: Record<IngestResult['outcome'], number> = { applied: 0, invalid: 1, write_failed: 1, failed: 2 };

/** The `--json` summary: the outcome with its own fields, the input's name and the run's duration. */
function reportJson(result: IngestResult, name: string, seconds: number): number {
  process.stdout.write(`${jsonText({ input: name, ...result, seconds })}\n`);
  return EXIT_CODES[result.outcome];
}

/** What was committed before a failure, as the last line of the report. */
function committed(result: {
  events: number;
  duplicates: number;
  batches: number;
  appliedThroughLine: number;
}): string {
  if (result.events === 0 && result.duplicates === 0) return 'nothing was applied.';
  const transactions = `${result.batches} transaction${result.batches === 1 ? '' : 's'}`;
  const skipped = result.duplicates > 0 ? `, ${result.duplicates} duplicates skipped` : '';
  return `${result.events} events through line ${result.appliedThroughLine} were applied (${transactions}${skipped}).`;
}

/** The text report: each line with its control characters escaped (a message can quote the input). */
function report(result: IngestResult, name: string): number {
  const out = (line: string) => process.stdout.write(`${printable(line)}\n`);
  const err = (line: string) => process.stderr.write(`${printable(line)}\n`);
  switch (result.outcome) {
    case 'applied': {
      const skipped =
        result.duplicates > 0
          ? ` ${result.duplicates} duplicate${result.duplicates === 1 ? '' : 's'} (ids applied before) skipped.`
          : '';
      out(
        `Applied ${result.events} events from ${name} in ${result.batches} transaction${result.batches === 1 ? '' : 's'}.${skipped}`,
      );
      return 0;
    }
    case 'invalid':
      for (const error of result.errors) err(`${name}: line ${error.line}: field ${error.field} ${error.message}`);
      err(`${name}: rejected; nothing was applied.`);
      return 1;
    case 'write_failed': {
      const { firstLine, lastLine } = result.rejected;
      const where = result.line === undefined ? `lines ${firstLine}-${lastLine}` : `line ${result.line}`;
      err(`${name}: ${where}: ${result.message}`);
      err(`${name}: the batch of lines ${firstLine}-${lastLine} was rolled back; ${committed(result)}`);
      return 1;
    }
    case 'failed': {
      const where = result.line !== undefined ? `line ${result.line}: ` : '';
      err(`${name}: ${where}failed: ${result.message}`);
      const batch = result.rejected
        ? `the batch of lines ${result.rejected.firstLine}-${result.rejected.lastLine} was not committed; `
        : '';
      err(`${name}: ${batch}${committed(result)}`);
      return 2;
    }
  }
}
