import type { Command } from 'commander';
import { systemClock } from '../clock.js';
import type { IngestResult } from '../ingest/ingest-file.js';
import { settingOption } from '../settings/read-setting.js';
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
    .action(async (file: string, opts: { db?: string; batchSize: number; stdinLimit: number; json?: boolean }) => {
      const { ingestFile, ingestStream } = await import('../ingest/ingest-file.js');
      const store = await openDb(opts.db, { create: true });
      const name = file === '-' ? 'stdin' : file;
      const progress = ingestProgress(process.stderr, printable(name));
      const started = performance.now();
      try {
        const deps = {
          store,
          clock: systemClock,
          batchSize: opts.batchSize,
          onProgress: progress.update,
        };
        // Standard input is read once and never copied to disk: see docs/ingest.md.
        const result =
          file === '-'
            ? await ingestStream(process.stdin, { ...deps, limitBytes: opts.stdinLimit * 1024 * 1024 })
            : await ingestFile(file, deps);
        progress.stop();
        const seconds = Math.round(performance.now() - started) / 1000;
        process.exitCode = opts.json ? reportJson(result, name, seconds) : report(result, name);
      } finally {
        progress.stop();
        await store.close();
      }
    });
}

const EXIT_CODES: Record<IngestResult['outcome'], number> = { applied: 0, invalid: 1, write_failed: 1, failed: 2 };

/** The `--json` summary: the outcome with its own fields, the input's name and the run's duration. */
function reportJson(result: IngestResult, name: string, seconds: number): number {
  process.stdout.write(`${jsonText({ input: name, ...result, seconds })}\n`);
  return EXIT_CODES[result.outcome];
}

/** What was committed before a failure, as the last line of the report. */
function committed(result: { events: number; batches: number; appliedThroughLine: number }): string {
  if (result.events === 0) return 'nothing was applied.';
  const transactions = `${result.batches} transaction${result.batches === 1 ? '' : 's'}`;
  return `${result.events} events through line ${result.appliedThroughLine} were applied (${transactions}).`;
}

/** The text report: each line with its control characters escaped (a message can quote the input). */
function report(result: IngestResult, name: string): number {
  const out = (line: string) => process.stdout.write(`${printable(line)}\n`);
  const err = (line: string) => process.stderr.write(`${printable(line)}\n`);
  switch (result.outcome) {
    case 'applied':
      out(
        `Applied ${result.events} events from ${name} in ${result.batches} transaction${result.batches === 1 ? '' : 's'}.`,
      );
      return 0;
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
