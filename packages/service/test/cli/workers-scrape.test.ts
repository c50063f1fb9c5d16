import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, HAS_REDIS_SERVER, type OwnRedis, startOwnRedis } from '../access/own-redis.js';
import { opsGet, sample } from '../operator-listener/scrape.js';
import { cliJson, type RunningCli, startCli, tempDir } from './cli.js';
import { waitFor } from './raw-client.js';

// The primary's operator listener under `serve --workers` (docs/operations.md) stays useful exactly when
// workers fail: a scrape answers 200 at once with what the listening workers report and names the workers
// it lacks (`worker_scraped`), whether one is starting, dead or stuck; and /readyz reports a Redis that
// refuses writes as away. Each test runs a redis-server of its own (the shared Redis is never touched).

/** The workers of a running primary by their index: its children running crm-export. */
function workers(primary: number): Map<number, number> {
  const found = new Map<number, number>();
  let children: number[] = [];
  try {
    children = execFileSync('pgrep', ['-P', String(primary)])
      .toString()
      .trim()
      .split('\n')
      .map(Number);
  } catch {
    return found;
  }
  for (const pid of children) {
    try {
      const index = /(?:^|\0)CRM_EXPORT_WORKER_INDEX=(\d+)\0/.exec(readFileSync(`/proc/${pid}/environ`, 'utf8'));
      if (index) found.set(Number(index[1]), pid);
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

const signal = (pid: number, name: NodeJS.Signals) => {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
};

async function scrape(ops: string) {
  const started = performance.now();
  const { status, body } = await opsGet(ops, '/metrics');
  return {
    status,
    ms: performance.now() - started,
    scraped: [0, 1].map((worker) => sample(body, 'crm_export_worker_scraped', { worker: String(worker) })),
    requests: sample(body, 'crm_export_http_requests_total', { route: '/v1/me', status: '200' }) ?? 0,
    redisUp: sample(body, 'crm_export_redis_up'),
  };
}

const opsOrigin = (stdout: string) => /operator listener: (http:\/\/\S+) /.exec(stdout)?.[1] as string;

describe.skipIf(!HAS_REDIS_SERVER)(
  `serve --workers: the primary's operator listener while workers fail (own redis-server)${HAS_REDIS_SERVER ? '' : ' (skipped: redis-server not on PATH)'}`,
  { timeout: 120_000 },
  () => {
    const tmp = tempDir();
    const db = tmp.db('workers-scrape');
    let key: string;
    let redis: OwnRedis;

    beforeAll(async () => {
      redis = await startOwnRedis();
      const demo = await cliJson<{ teams: string[] }>(['demo', '--db', db, '--teams', '1', '--leads', '4', '--json']);
      const team = demo.teams[0] as string;
      const args = ['admin', 'integrations', 'create', '--db', db, '--teams', team, '--name', 'Scrape', '--json'];
      key = (await cliJson<{ key: string }>(args)).key;
    }, 60_000);
    afterAll(async () => {
      await redis?.close();
      tmp.remove();
    });

    const serve = (): Promise<RunningCli> =>
      startCli(['serve', '--db', db, '--port', '0', '--workers', '2', '--ops-port', '0'], {
        REDIS_URL: redis.url,
        CRM_EXPORT_LIMITS: JSON.stringify({ workerRestartMs: 1500 }),
      });

    it('a scrape answers 200 at once with the listening workers while one is dead, starting or stuck, and names the one it lacks', async () => {
      const server = await serve();
      const stopped = new Set<number>();
      try {
        const ops = opsOrigin(server.stdout());
        for (let i = 0; i < 10; i++) {
          const response = await fetch(`${server.base}/me`, { headers: { authorization: `Bearer ${key}` } });
          expect(response.status).toBe(200);
        }
        const healthy = await scrape(ops);
        expect(healthy).toMatchObject({ status: 200, scraped: [1, 1], requests: 10 });

        const before = workers(server.pid);
        const victim = before.get(1) as number;
        signal(victim, 'SIGKILL');
        await waitFor(server.stderr, `(pid ${victim}) exited with SIGKILL; starting a new one in 1500 ms`);
        // Dead, waiting to be replaced.
        const dead = await scrape(ops);
        expect(dead).toMatchObject({ status: 200, scraped: [1, 0] });
        expect(dead.ms).toBeLessThan(1000);

        // Its replacement, held while it starts (stopped before it could listen).
        let starting: number | undefined;
        const end = Date.now() + 10_000;
        while (starting === undefined && Date.now() < end) {
          const pid = workers(server.pid).get(1);
          if (pid !== undefined && pid !== victim) starting = pid;
          else await new Promise((resolve) => setTimeout(resolve, 5));
        }
        expect(starting).toBeDefined();
        signal(starting as number, 'SIGSTOP');
        stopped.add(starting as number);
        const whileStarting = await scrape(ops);
        expect(whileStarting).toMatchObject({ status: 200, scraped: [1, 0] });
        expect(whileStarting.ms).toBeLessThan(1000);
        // What the live worker reports is there (the dead one's counts went with it).
        expect(whileStarting.redisUp).toBe(1);
        expect(whileStarting.requests).toBeLessThanOrEqual(10);

        signal(starting as number, 'SIGCONT');
        stopped.delete(starting as number);
        const back = Date.now() + 30_000;
        while ((await scrape(ops)).scraped[1] !== 1) {
          expect(Date.now()).toBeLessThan(back);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }

        // A listening worker that stopped answering (stuck): the scrape waits for it a bounded time only.
        const stuck = workers(server.pid).get(0) as number;
        signal(stuck, 'SIGSTOP');
        stopped.add(stuck);
        const whileStuck = await scrape(ops);
        expect(whileStuck).toMatchObject({ status: 200, scraped: [0, 1] });
        expect(whileStuck.ms).toBeLessThan(4000);
        signal(stuck, 'SIGCONT');
        stopped.delete(stuck);
        expect((await scrape(ops)).scraped).toEqual([1, 1]);
      } finally {
        for (const pid of stopped) signal(pid, 'SIGCONT');
        await server.stop();
      }
    });

    it("the primary's /readyz reports Redis away while it refuses writes (out of memory), and up once it accepts them", async () => {
      const server = await serve();
      const admin = new Redis(redis.url, { maxRetriesPerRequest: 0 });
      try {
        const ops = opsOrigin(server.stdout());
        const redisOf = async () => (JSON.parse((await opsGet(ops, '/readyz')).body) as { redis: string }).redis;
        expect(await redisOf()).toBe('up');
        await admin.config('SET', 'maxmemory-policy', 'noeviction');
        await admin.config('SET', 'maxmemory', '1');
        expect(await redisOf()).toBe('away');
        // The workers' limits find it too at their next charge.
        expect((await fetch(`${server.base}/me`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
        expect((await scrape(ops)).redisUp).toBe(0);
        await admin.config('SET', 'maxmemory', '0');
        expect(await redisOf()).toBe('up');
        // A replica of a primary that does not exist: read-only.
        await admin.replicaof('127.0.0.1', String(await freePort()));
        expect(await redisOf()).toBe('away');
        await admin.replicaof('NO', 'ONE');
        expect(await redisOf()).toBe('up');
      } finally {
        await admin.config('SET', 'maxmemory', '0');
        await admin.replicaof('NO', 'ONE');
        admin.disconnect();
        await server.stop();
      }
    });
  },
);
