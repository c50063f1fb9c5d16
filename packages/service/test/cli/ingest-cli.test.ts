import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import { ndjson, VALID_EVENTS } from '../ingest/fixtures.js';
import { runCli, tempDir } from './cli.js';

async function leadJson(db: string, id: string): Promise<Record<string, unknown> | undefined> {
  const store = await openStore(db);
  try {
    const record = await store.getRecord('lead', id);
    return record?.json ? (JSON.parse(record.json) as Record<string, unknown>) : undefined;
  } finally {
    await store.close();
  }
}

describe('crm-export ingest, as a user runs it', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  afterAll(() => tmp.remove());

  it('applies a file of events and says how many', async () => {
    const path = join(tmp.dir, 'events.ndjson');
    writeFileSync(path, ndjson(VALID_EVENTS));
    const db = tmp.db('file');
    const result = await runCli(['ingest', '--db', db, path]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Applied 6 events');
    expect(await leadJson(db, 'lead_1')).toMatchObject({ object: 'lead', status: 'contacted', team: 'team_acme1' });
  });

  it('reads standard input when the file is -', async () => {
    const db = tmp.db('stdin');
    const result = await runCli(['ingest', '--db', db, '-'], { input: ndjson(VALID_EVENTS) });
    expect(result.code).toBe(0);
    expect(await leadJson(db, 'lead_1')).toMatchObject({ status: 'contacted' });
  });

  it('rejects a bad line with a clear error naming the line and the field, exits non-zero and applies nothing', async () => {
    const lines: unknown[] = [...VALID_EVENTS];
    lines[5] = { ...VALID_EVENTS[5], status: 'won' };
    const path = join(tmp.dir, 'bad.ndjson');
    writeFileSync(path, ndjson(lines));
    const db = tmp.db('bad');
    const result = await runCli(['ingest', '--db', db, path]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('line 6: field status');
    expect(result.stderr).toContain('nothing was applied');
    expect(await leadJson(db, 'lead_1')).toBeUndefined();
  });

  it('a batch the write side refuses is rolled back whole: the error names its line, nothing of it is applied', async () => {
    const lines = [...VALID_EVENTS.slice(0, 4), { ...VALID_EVENTS[4]!, assignees: ['mem_nobody'] }, VALID_EVENTS[5]];
    const path = join(tmp.dir, 'refused.ndjson');
    writeFileSync(path, ndjson(lines));
    const db = tmp.db('refused');
    const result = await runCli(['ingest', '--db', db, '--batch-size', '4', path]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('line 5:');
    expect(result.stderr).toContain('mem_nobody');
    expect(result.stderr).toContain('lines 5-6 was rolled back; 4 events through line 4 were applied');
    expect(await leadJson(db, 'lead_1')).toBeUndefined();
  });
});
