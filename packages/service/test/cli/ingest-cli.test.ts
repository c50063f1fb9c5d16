import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import { installFailingTrigger } from '../ingest/failing-trigger.js';
import { ndjson, VALID_EVENTS } from '../ingest/fixtures.js';
import { REPO_ROOT, runCli, tempDir } from './cli.js';

/** Every file under `dir`, recursively, as latin1 text (a byte scan). */
function bytesUnder(dir: string): string {
  if (!existsSync(dir)) return '';
  return readdirSync(dir)
    .map((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? bytesUnder(path) : readFileSync(path).toString('latin1');
    })
    .join('\n');
}

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

  it('ingest - writes nothing with content to disk, not even a temporary file when the process is killed', async () => {
    const secret = 'SECRET-MESSAGE-TEXT-KILLED-9d41';
    const tmp2 = join(tmp.dir, 'tmpdir');
    mkdirSync(tmp2);
    const dbPath = join(tmp.dir, 'killed.db');
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp2, LOG_LEVEL: 'warn' };
    delete env.DATABASE_URL;
    const child = spawn(
      process.execPath,
      [join(REPO_ROOT, 'packages/service/bin/crm-export.js'), 'ingest', '--db', `sqlite:${dbPath}`, '-'],
      { cwd: REPO_ROOT, env },
    );
    const closed = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('close', (_code, signal) => resolve(signal)),
    );
    // The database is opened before standard input is read.
    for (let i = 0; i < 600 && !existsSync(dbPath); i++) await sleep(50);
    const message = {
      type: 'message.recorded',
      at: '2026-01-11T11:06:00Z',
      message: 'msg_1',
      conversation: 'conv_1',
      direction: 'inbound',
      text: secret,
    };
    child.stdin.write(ndjson([...VALID_EVENTS, message, message, message]));
    await sleep(500);
    child.kill('SIGKILL');
    expect(await closed).toBe('SIGKILL');
    expect(bytesUnder(tmp2)).not.toContain(secret);
    expect(bytesUnder(tmp.dir)).not.toContain(secret);
    expect(readdirSync(tmp2).filter((name) => name.startsWith('crm-export'))).toEqual([]);
  });

  it('a database error exits non-zero and prints which batches were committed', async () => {
    const db = tmp.db('dberror');
    const store = await openStore(db);
    await installFailingTrigger(store, 'lead_boom');
    await store.close();
    const boom = { ...VALID_EVENTS[4]!, lead: 'lead_boom' };
    const result = await runCli(['ingest', '--db', db, '--batch-size', '4', '-'], {
      input: ndjson([...VALID_EVENTS, boom]),
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('refused by a test trigger');
    expect(result.stderr).toContain(
      'the batch of lines 5-7 was not committed; 4 events through line 4 were applied (1 transaction)',
    );
    expect(await leadJson(db, 'lead_1')).toBeUndefined();
  });

  it('ingest - beyond --stdin-limit is refused, exits non-zero and applies nothing', async () => {
    const db = tmp.db('limit');
    const big = Array.from({ length: 3000 }, (_, i) => ({
      type: 'lead.created',
      at: '2026-01-11T10:30:00Z',
      team: 'team_acme1',
      lead: `lead_n${i}`,
      status: 'new',
      name: 'x'.repeat(400),
    }));
    const result = await runCli(['ingest', '--db', db, '--stdin-limit', '1', '-'], {
      input: ndjson([...VALID_EVENTS, ...big]),
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('more than 1 MiB');
    expect(result.stderr).toContain('nothing was applied');
    expect(await leadJson(db, 'lead_1')).toBeUndefined();
  });
});
