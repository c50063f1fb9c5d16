import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { ingestProgress } from '../../src/cli/ingest-progress.js';
import { ManualClock } from '../../src/clock.js';
import { type IngestProgress, ingestFile } from '../../src/ingest/ingest-file.js';
import { openStore } from '../../src/store/open-store.js';
import { ndjson, VALID_EVENTS } from '../ingest/fixtures.js';
import { runCli, tempDir } from './cli.js';

// Feedback on long work: ingest reports its progress and can print its outcome as JSON.

describe('ingest feedback', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  afterAll(() => tmp.remove());

  it('--json prints the outcome as one JSON object: events, transactions, duration', async () => {
    const path = join(tmp.dir, 'events.ndjson');
    writeFileSync(path, ndjson(VALID_EVENTS));
    const result = await runCli(['ingest', '--db', tmp.db('json'), '--batch-size', '4', '--json', path]);
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({ input: path, outcome: 'applied', events: 6, batches: 2, lines: 6 });
    expect(typeof summary.seconds).toBe('number');
    expect(result.stdout.trim().split('\n')).toHaveLength(1);
  });

  it('--json on a rejected file names the lines and fields, with the same exit code as the text report', async () => {
    const lines: unknown[] = [...VALID_EVENTS];
    lines[5] = { ...VALID_EVENTS[5], status: 'won' };
    const path = join(tmp.dir, 'bad.ndjson');
    writeFileSync(path, ndjson(lines));
    const result = await runCli(['ingest', '--db', tmp.db('bad'), '--json', path]);
    expect(result.code).toBe(1);
    const summary = JSON.parse(result.stdout) as { outcome: string; errors: { line: number; field: string }[] };
    expect(summary.outcome).toBe('invalid');
    expect(summary.errors[0]).toMatchObject({ line: 6, field: 'status' });
  });

  it('reports progress after validation and after every committed batch, out of the total', async () => {
    const path = join(tmp.dir, 'progress.ndjson');
    writeFileSync(path, ndjson(VALID_EVENTS));
    const store = await openStore(tmp.db('progress'));
    const seen: IngestProgress[] = [];
    try {
      const result = await ingestFile(path, {
        store,
        clock: new ManualClock(),
        batchSize: 4,
        onProgress: (p) => seen.push(p),
      });
      expect(result.outcome).toBe('applied');
    } finally {
      await store.close();
    }
    expect(seen).toEqual([
      { phase: 'validating', lines: 6 },
      { phase: 'applying', events: 4, total: 6 },
      { phase: 'applying', events: 6, total: 6 },
    ]);
  });

  it('off a terminal a long run prints a plain progress line every 5 s, and a short one prints nothing', () => {
    const clock = new ManualClock();
    const out = new PassThrough();
    let text = '';
    out.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    const reporter = ingestProgress(out as unknown as NodeJS.WriteStream, 'events.ndjson', () => clock.now());
    reporter.update({ phase: 'validating', lines: 5000 });
    clock.advance(4_999);
    reporter.update({ phase: 'applying', events: 1000, total: 20_003 });
    expect(text).toBe('');
    clock.advance(1);
    reporter.update({ phase: 'applying', events: 2000, total: 20_003 });
    clock.advance(1000);
    reporter.update({ phase: 'applying', events: 3000, total: 20_003 });
    reporter.stop();
    expect(text).toBe('events.ndjson: applying, 2000/20003 events committed (9%, 5 s)\n');
  });
});
