import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { systemClock } from '../clock.js';
import { DEFAULT_INGEST_BATCH } from '../ingest/ingest-defaults.js';
import type { IngestResult } from '../ingest/ingest-file.js';
import { intOption, openDb } from './options.js';

export function registerIngestCommand(program: Command): void {
  program
    .command('ingest')
    .description('apply CRM events from an NDJSON file (one event per line; "-" reads standard input)')
    .argument('<file>', 'NDJSON file, or - for standard input')
    .option('--db <url>', 'database URL (default: DATABASE_URL, else sqlite:./data/crm-export.db)')
    .option('--batch-size <n>', 'events per transaction', intOption(1, 1_000_000), DEFAULT_INGEST_BATCH)
    .action(async (file: string, opts: { db?: string; batchSize: number }) => {
      // Standard input can be read once; the two passes (validate, then apply) need a file.
      const { ingestFile } = await import('../ingest/ingest-file.js');
      const spool = file === '-' ? await spoolStdin() : undefined;
      const store = await openDb(opts.db);
      try {
        const result = await ingestFile(spool?.path ?? file, {
          store,
          clock: systemClock,
          batchSize: opts.batchSize,
        });
        process.exitCode = report(result, file === '-' ? 'stdin' : file);
      } finally {
        await store.close();
        await spool?.remove();
      }
    });
}

function report(result: IngestResult, name: string): number {
  switch (result.outcome) {
    case 'applied':
      process.stdout.write(
        `Applied ${result.events} events from ${name} in ${result.batches} transaction${result.batches === 1 ? '' : 's'}.\n`,
      );
      return 0;
    case 'invalid':
      for (const error of result.errors) {
        process.stderr.write(`${name}: line ${error.line}: field ${error.field} ${error.message}\n`);
      }
      process.stderr.write(`${name}: rejected; nothing was applied.\n`);
      return 1;
    case 'write_failed': {
      const { firstLine, lastLine } = result.rejected;
      const where = result.line === undefined ? `lines ${firstLine}-${lastLine}` : `line ${result.line}`;
      process.stderr.write(`${name}: ${where}: ${result.message}\n`);
      process.stderr.write(
        `${name}: the batch of lines ${firstLine}-${lastLine} was rolled back; ${
          result.events === 0
            ? 'nothing was applied.'
            : `${result.events} events through line ${result.appliedThroughLine} were applied.`
        }\n`,
      );
      return 1;
    }
  }
}

async function spoolStdin(): Promise<{ path: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'crm-export-ingest-'));
  const path = join(dir, 'stdin.ndjson');
  await pipeline(process.stdin, createWriteStream(path));
  return { path, remove: () => rm(dir, { recursive: true, force: true }) };
}
