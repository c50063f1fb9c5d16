// End to end: the sync engine paces itself by the item budget headers (`RateLimit`) of the real service.
// The service runs with a small item allowance and a one-second rate window; the team holds more items than
// one window allows but far fewer than the day. An initial sync that paces itself gets no 429; the same sync
// with pacing off gets 429s (and still finishes by waiting Retry-After), so the figure can fail.
// With REDIS_URL set, the service counts on Redis (it reads REDIS_URL like any operator setting).

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PaceInfo } from '../../src/client/client-options.js';
import { CrmExportClient } from '../../src/client/crm-export-client.js';
import { FetchTransport, type Transport } from '../../src/client/transport.js';
import { MirrorStore } from '../../src/sync/mirror-store.js';
import { openMirror } from '../../src/sync/open-mirror.js';
import { SyncEngine } from '../../src/sync/sync-engine.js';
import type { SyncWait } from '../../src/sync/sync-engine-options.js';
import { runService, serviceUnavailableReason, startServe } from './service-process.js';

const ITEMS_PER_WINDOW = 150;
const PAGE_LIMIT = 50;
const LIMITS = {
  itemsPerMinute: ITEMS_PER_WINDOW,
  rateWindowSeconds: 1,
  dailyItemQuota: 100_000,
  feedHoldBackMs: 1,
};

const unavailable = serviceUnavailableReason();
if (unavailable) console.warn(`skipping the end-to-end pacing test: ${unavailable}`);

interface SyncRun {
  outcome: Record<string, string>;
  tooMany: number;
  requests: number;
  paced: PaceInfo[];
  waits: SyncWait[];
  records: number;
  budgetHeaders: number;
}

describe.skipIf(unavailable !== null)(
  `end to end: an initial sync paced by the budget headers${unavailable === null ? '' : ` (skipped: ${unavailable})`}`,
  () => {
    let dir = '';
    let serve: ChildProcess | undefined;
    let baseUrl = '';
    let team = '';
    const keys: string[] = [];

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'crm-pacing-'));
      const db = `sqlite:${join(dir, 'service.db')}`;
      const demo = JSON.parse(
        runService(['demo', '--db', db, '--teams', '1', '--leads', '20', '--seed', '7', '--no-progress', '--json']),
      ) as { teams: string[] };
      team = demo.teams[0] as string;
      // One key per run: each has its own budget, so the two runs cannot spend each other's items.
      for (const name of ['paced', 'unpaced']) {
        const created = runService([
          'admin',
          'integrations',
          'create',
          '--db',
          db,
          '--teams',
          team,
          '--name',
          name,
          '--json',
        ]);
        keys.push((JSON.parse(created) as { key: string }).key);
      }
      const started = await startServe(db, { CRM_EXPORT_LIMITS: JSON.stringify(LIMITS) });
      serve = started.child;
      baseUrl = started.baseUrl;
    }, 120_000);

    afterAll(() => {
      serve?.kill('SIGTERM');
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    async function initialSync(key: string, pace: boolean): Promise<SyncRun> {
      const run: SyncRun = { outcome: {}, tooMany: 0, requests: 0, paced: [], waits: [], records: 0, budgetHeaders: 0 };
      const fetch = new FetchTransport();
      // Counts every answer the service gives this client, 429s included (retries are answers too).
      const counting: Transport = {
        async send(request) {
          const res = await fetch.send(request);
          run.requests++;
          if (res.status === 429) run.tooMany++;
          if (res.headers.get('ratelimit') !== null) run.budgetHeaders++;
          return res;
        },
      };
      const client = new CrmExportClient({
        baseUrl,
        key,
        pace,
        transport: counting,
        onPace: (info) => run.paced.push(info),
        retry: { maxRetries: 20 },
      });
      const mirror = await openMirror('sqlite::memory:');
      try {
        const store = new MirrorStore(mirror.db);
        const engine = new SyncEngine({
          client,
          store,
          key,
          once: true,
          pageLimit: PAGE_LIMIT,
          onWait: (w) => run.waits.push(w),
        });
        run.outcome = await engine.run();
        const row = await mirror.db
          .selectFrom('mirror_records')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        run.records = Number(row.n);
      } finally {
        await mirror.close();
      }
      return run;
    }

    it('a team larger than one window but within the day syncs with 0 rate-limit 429s when paced; unpaced it gets 429s', async () => {
      const [paced, unpaced] = await Promise.all([
        initialSync(keys[0] as string, true),
        initialSync(keys[1] as string, false),
      ]);
      console.info(
        `initial sync of ${paced.records} records, ${ITEMS_PER_WINDOW} items per 1 s window, pages of ${PAGE_LIMIT}: ` +
          `paced ${paced.tooMany} x 429 in ${paced.requests} answers (${paced.paced.length} waits); ` +
          `unpaced ${unpaced.tooMany} x 429 in ${unpaced.requests} answers`,
      );
      expect(paced.outcome).toEqual({ [team]: 'caught_up' });
      expect(unpaced.outcome).toEqual({ [team]: 'caught_up' });
      // The team is bigger than one window's allowance, and both runs mirrored all of it.
      expect(paced.records).toBeGreaterThan(ITEMS_PER_WINDOW);
      expect(unpaced.records).toBe(paced.records);
      expect(paced.budgetHeaders).toBeGreaterThan(0);
      // Pacing: it waited for the window instead of asking, and never got a 429.
      expect(paced.tooMany).toBe(0);
      expect(paced.paced.length).toBeGreaterThan(0);
      expect(paced.paced.every((p) => p.policy === 'items-minute' && p.remaining < p.needed)).toBe(true);
      expect(paced.waits.length).toBe(paced.paced.length);
      expect(paced.waits.every((w) => w.reason === 'items-minute' && w.waitMs > 0)).toBe(true);
      // The baseline: the same sync without pacing asks anyway and is refused.
      expect(unpaced.tooMany).toBeGreaterThan(0);
      expect(unpaced.paced).toEqual([]);
    }, 60_000);
  },
);
