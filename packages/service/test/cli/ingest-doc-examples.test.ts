import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { ingestProgress } from '../../src/cli/ingest-progress.js';
import { openSqliteFile } from '../support/sqlite-file.js';
import { runCli, tempDir } from './cli.js';
import { commentOf, docBlock, docSpan, examplePattern } from './doc-examples.js';

// docs/ingest.md shows what `crm-export ingest` prints; these run its examples (the example file of the
// page itself) and compare the output with the page's text, the file's folder left out.

const DOC = 'docs/ingest.md';

describe('every ingest report docs/ingest.md shows is what the command prints', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  afterAll(() => tmp.remove());
  /** The page's own example file, one event per line. */
  const example = docBlock(DOC, '"type":"organization.upsert"').trimEnd().split('\n');
  const file = (name: string, lines: readonly string[]) => {
    writeFileSync(join(tmp.dir, name), `${lines.join('\n')}\n`);
    return join(tmp.dir, name);
  };
  /** What the command printed, with the folder of the test's files left out (the page runs it in place). */
  const shown = (text: string) => text.replaceAll(`${tmp.dir}/`, '');

  it('the example file: the applied report, --json, and the key command after it', async () => {
    const run = docBlock(DOC, 'npx crm-export ingest events.ndjson');
    const path = file('events.ndjson', example);
    const applied = await runCli(['ingest', '--db', tmp.db('applied'), path]);
    expect([applied.code, shown(applied.stdout), applied.stderr]).toEqual([
      0,
      `${commentOf(run, 'npx crm-export ingest events.ndjson')}\n`,
      '',
    ]);
    const json = await runCli(['ingest', '--json', '--db', tmp.db('json'), path]);
    const documented = JSON.parse(commentOf(docBlock(DOC, 'ingest --json'), 'npx crm-export ingest --json'));
    const printed = JSON.parse(shown(json.stdout)) as Record<string, unknown>;
    expect(printed.seconds).toEqual(expect.any(Number));
    expect({ ...printed, seconds: documented.seconds }).toEqual(documented);
    // "To read it through the API, create a key": as the page writes it, against that database.
    const create = docSpan(DOC, 'admin integrations create')
      .replace(/^npx crm-export /, '')
      .split(' ');
    const created = await runCli([...create, '--db', tmp.db('applied')]);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout).key).toMatch(/^crmx_live_[0-9A-Za-z]+$/);
  });

  it('a refused batch and a failed one: the two reports of the page, line for line', async () => {
    // The refused batch: line 5 of 6 names a member the team does not have, --batch-size 4.
    const refused = [...example.slice(0, 4), example[4]?.replace('"mem_anna"', '"mem_nobody"'), example[5]];
    const batch = await runCli([
      'ingest',
      '--batch-size',
      '4',
      '--db',
      tmp.db('refused'),
      file('events.ndjson', refused as string[]),
    ]);
    expect(batch.code).toBe(1);
    expect(shown(batch.stderr)).toBe(docBlock(DOC, 'was rolled back'));

    // Any other failure: a database error in the second batch of 2,000 (a trigger raises the page's message).
    const failedBlock = docBlock(DOC, 'was not committed');
    const message = /failed: SqliteError: (.*)\n/.exec(failedBlock)?.[1] as string;
    const leads = Array.from({ length: 3996 }, (_, i) =>
      JSON.stringify({ type: 'lead.created', at: '2026-01-11T10:30:00Z', team: 'team_acme1', lead: `lead_${i + 5}` }),
    );
    const db = tmp.db('failed');
    expect((await runCli(['migrate', '--db', db])).code).toBe(0);
    const sqlite = openSqliteFile(db.slice('sqlite:'.length));
    sqlite.exec(
      `CREATE TRIGGER full BEFORE INSERT ON records WHEN NEW.id = 'lead_2500' BEGIN SELECT RAISE(ABORT, '${message}'); END`,
    );
    sqlite.close();
    const failed = await runCli(['ingest', '--db', db, file('events.ndjson', [...example.slice(0, 4), ...leads])]);
    expect(failed.code).toBe(2);
    expect(shown(failed.stderr)).toBe(failedBlock);
  });

  it('a bad line, an input over --stdin-limit, and the progress line off a terminal', async () => {
    const bad = await runCli([
      'ingest',
      '--db',
      tmp.db('bad'),
      file('events.ndjson', [example[0]?.replace('"api_included"', '"gold"') as string]),
    ]);
    expect(bad.code).toBe(1);
    // "each as `FILE: line N: field F <rule>`"
    expect(shown(bad.stderr).split('\n')[0]).toMatch(/^events\.ndjson: line 1: field plan \S.*$/);

    const limit = docSpan(DOC, 'holds more than');
    const line = (i: number) =>
      JSON.stringify({
        type: 'lead.created',
        at: '2026-01-11T10:30:00Z',
        team: 'team_acme1',
        lead: `lead_${i}`,
        name: 'n'.repeat(200),
      });
    const input = `${Array.from({ length: 8000 }, (_, i) => line(i)).join('\n')}\n`;
    const over = await runCli(['ingest', '--stdin-limit', '1', '--db', tmp.db('stdin'), '-'], { input });
    expect(over.code).toBe(1);
    expect(over.stderr.split('\n')[0]?.replace('than 1 MiB', 'than 256 MiB')).toMatch(examplePattern(limit));

    // The progress line: an applying run 10 s in, off a terminal.
    const progress = docBlock(DOC, 'events committed').trimEnd();
    const [, name, events, total, seconds] = /^(\S+): applying, (\d+)\/(\d+) .*, (\d+) s\)$/.exec(progress) ?? [];
    let written = '';
    const stream = new Writable({
      write(chunk, _encoding, done) {
        written += String(chunk);
        done();
      },
    }) as unknown as NodeJS.WriteStream;
    let now = 0;
    const reporter = ingestProgress(stream, name as string, () => now);
    now = Number(seconds) * 1000;
    reporter.update({ phase: 'applying', events: Number(events), total: Number(total) });
    expect(written).toBe(`${progress}\n`);
  });
});
