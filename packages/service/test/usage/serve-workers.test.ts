import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { lastUses, requestLogPage } from '../../src/usage/usage-reads.js';
import { cliJson, startCli, tempDir } from '../cli/cli.js';

// A real `crm-export serve --workers 2` on a SQLite file (PostgreSQL is left out here: the command uses its
// default schema, which tests running side by side would share). Requests on fresh connections go to both
// workers; each worker writes what it recorded within a second, and what it holds at shutdown before it exits.

/** A GET on a connection of its own, so the kernel may hand it to either worker. */
function get(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

const REDIS_URL = process.env.REDIS_URL;

describe('recording under serve --workers 2', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  const db = tmp.db('workers');
  let key: string;
  let integration: string;

  beforeAll(async () => {
    const demo = await cliJson<{ teams: string[] }>(['demo', '--db', db, '--teams', '1', '--leads', '5', '--json']);
    const created = await cliJson<{ key: string; integration: { id: string } }>([
      'admin',
      'integrations',
      'create',
      '--db',
      db,
      '--teams',
      demo.teams[0] as string,
      '--name',
      'Workers',
      '--json',
    ]);
    key = created.key;
    integration = created.integration.id;
  }, 120_000);
  afterAll(() => tmp.remove());

  it.skipIf(!REDIS_URL)(
    `last use survives across workers: every request is logged and the newest address wins, within a flush${REDIS_URL ? '' : ' (skipped: set REDIS_URL, which --workers needs)'}`,
    async () => {
      const server = await startCli(
        ['serve', '--db', db, '--port', '0', '--workers', '2', '--trust-proxy', '127.0.0.1'],
        { REDIS_URL: REDIS_URL as string },
      );
      const store = new SqliteStore({ path: db.slice('sqlite:'.length) });
      try {
        // Uses are ordered by arrival to the millisecond: two requests in the same millisecond on two workers
        // are a tie, which either flush may win. A few ms between requests keep the order the test asserts.
        const gap = () => new Promise((resolve) => setTimeout(resolve, 3));
        for (let i = 1; i <= 20; i++) {
          await gap();
          const status = await get(`${server.base}/me`, {
            authorization: `Bearer ${key}`,
            'x-forwarded-for': `192.0.2.${i}`,
          });
          expect(status).toBe(200);
        }
        // Within about a second of the last request, without stopping anything.
        await vi.waitFor(
          async () => expect((await requestLogPage(store, { integration, limit: 100 })).entries).toHaveLength(20),
          { timeout: 10_000, interval: 250 },
        );
        const { entries } = await requestLogPage(store, { integration, limit: 100 });
        expect(new Set(entries.map((e) => e.address)).size).toBe(20);
        expect(entries.every((e) => e.endpoint === '/v1/me' && e.status === 200)).toBe(true);
        expect((await lastUses(store, 'integration', [integration]))[integration]?.address).toBe('192.0.2.20');
        // Requests answered right before shutdown are written as the workers stop.
        for (let i = 21; i <= 25; i++) {
          await gap();
          await get(`${server.base}/me`, { authorization: `Bearer ${key}`, 'x-forwarded-for': `192.0.2.${i}` });
        }
        expect(await server.stop()).toBe(0);
        expect((await requestLogPage(store, { integration, limit: 100 })).entries).toHaveLength(25);
        expect((await lastUses(store, 'integration', [integration]))[integration]?.address).toBe('192.0.2.25');
      } finally {
        await server.stop();
        await store.close();
      }
    },
  );
});
