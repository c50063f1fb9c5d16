import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import { ndjson, VALID_EVENTS } from '../ingest/fixtures.js';
import { REPO_ROOT, runCli, tempDir } from './cli.js';

// `crm-export ingest - --follow`, as a producer pipes into it: batches commit while standard input stays
// open, and events sent again are reported as duplicates.

const WITH_IDS = VALID_EVENTS.map((event, i) => ({ ...event, id: `ev-${i + 1}` }));

async function leadName(db: string): Promise<unknown> {
  const store = await openStore(db);
  try {
    const record = await store.getRecord('lead', 'lead_1');
    return record?.json ? (JSON.parse(record.json) as { name?: unknown }).name : undefined;
  } finally {
    await store.close();
  }
}

describe('crm-export ingest --follow, as a producer pipes into it', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  afterAll(() => tmp.remove());

  it('commits each batch before standard input ends, and reports duplicates when it ends', async () => {
    const db = tmp.db('follow');
    const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn' };
    delete env.DATABASE_URL;
    const child = spawn(
      process.execPath,
      [join(REPO_ROOT, 'packages/service/bin/crm-export.js'), 'ingest', '--db', db, '--follow', '--linger', '50', '-'],
      { cwd: REPO_ROOT, env },
    );
    let stdout = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    child.stdin.write(ndjson(WITH_IDS));
    let name: unknown;
    for (let i = 0; i < 600 && name === undefined; i++) {
      await sleep(50);
      name = await leadName(db).catch(() => undefined);
    }
    // Standard input is still open: the batch was committed after its linger.
    expect(name).toBe('Jonas');
    child.stdin.write(
      ndjson([{ type: 'lead.updated', id: 'ev-7', at: '2026-01-12T10:00:00Z', lead: 'lead_1', name: 'Jo' }]),
    );
    for (let i = 0; i < 600 && name !== 'Jo'; i++) {
      await sleep(50);
      name = await leadName(db);
    }
    expect(name).toBe('Jo');
    child.stdin.end(ndjson(WITH_IDS.slice(0, 2)));
    expect(await closed).toBe(0);
    expect(stdout).toContain(
      'Applied 7 events from stdin in 3 transactions. 2 duplicates (ids applied before) skipped.',
    );
  });

  it('--follow reads standard input only', async () => {
    const result = await runCli(['ingest', '--follow', 'events.ndjson']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--follow reads standard input');
  });
});
