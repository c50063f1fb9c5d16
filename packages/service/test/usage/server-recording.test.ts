import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { startServer } from '../../src/server.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { requestLogPage } from '../../src/usage/usage-reads.js';
import { opsGet, sample } from '../operator-listener/scrape.js';

// The recorder as `serve` runs it (server.ts): on unless REQUEST_LOG says off, its drops counted in the
// operator listener's metrics, and what it holds written when the server closes.

const silent = pino({ level: 'silent' });

async function serve(requestLog: boolean | undefined, queue: number, path = ':memory:') {
  const store = new SqliteStore({ path });
  await store.migrate();
  const server = await startServer({
    store,
    host: '127.0.0.1',
    port: 0,
    logger: silent,
    limits: { ...DEFAULT_LIMITS, requestLogQueue: queue, requestLogFlushMs: 60_000 },
    ops: { host: '127.0.0.1', port: 0 },
    handleSignals: false,
    feedJobs: false,
    ...(requestLog === undefined ? {} : { requestLog }),
  });
  return { store, server };
}

describe('recording in the server', () => {
  it('a full queue drops and counts in request_log_dropped_total; the rest is written on close', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-export-recording-'));
    const path = join(dir, 'recording.db');
    const { server } = await serve(true, 2, path);
    expect(server.usage).toBeDefined();
    for (let i = 0; i < 5; i++) expect((await fetch(`${server.origin}/v1/me`)).status).toBe(401);
    const metrics = await opsGet(server.opsOrigin as string, '/metrics');
    expect(sample(metrics.body, 'crm_export_request_log_dropped_total')).toBe(3);
    expect(sample(metrics.body, 'crm_export_request_log_write_failures_total')).toBe(0);
    // close() writes what the recorder holds before it closes the store: read it from a reopened file.
    await server.close();
    const reopened = new SqliteStore({ path });
    try {
      const { entries } = await requestLogPage(reopened, { integration: '' });
      expect(entries.map((e) => `${e.status} ${e.code} ${e.endpoint}`)).toEqual([
        '401 invalid_credentials /v1/me',
        '401 invalid_credentials /v1/me',
      ]);
    } finally {
      await reopened.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('REQUEST_LOG=off (requestLog false) records nothing', async () => {
    const { store, server } = await serve(false, 100);
    try {
      expect(server.usage).toBeUndefined();
      expect((await fetch(`${server.origin}/v1/me`)).status).toBe(401);
      expect((await requestLogPage(store, { integration: null })).entries).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
