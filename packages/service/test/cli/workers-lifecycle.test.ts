import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restartDelay } from '../../src/cli/serve-workers.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { cliJson, type RunningCli, runCli, startCli, tempDir } from './cli.js';
import { CONTINUE, count, rawConnect, searchRequest, waitFor } from './raw-client.js';

// Issue: `serve --workers` that an operator can trust (docs/deploy.md, "Supervision").

const REDIS_URL = process.env.REDIS_URL;

describe('serve --workers: replacing a dead worker', () => {
  it('a dead worker is replaced after 1 s, doubling on each death up to 30 s, and after 1 s again once a worker ran 30 s', () => {
    const delays: number[] = [];
    let delay: number | undefined;
    for (let death = 0; death < 7; death++) {
      delay = restartDelay(delay, 2_000, DEFAULT_LIMITS);
      delays.push(delay);
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    expect(restartDelay(30_000, 30_000, DEFAULT_LIMITS)).toBe(1000);
  });
});

/** The workers of a running primary: its children running crm-export (tsx also starts an esbuild child). */
function workerPids(primary: number): number[] {
  const children = execFileSync('pgrep', ['-P', String(primary)])
    .toString()
    .trim()
    .split('\n')
    .map(Number);
  return children.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('crm-export.js');
    } catch {
      return false;
    }
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** GET /v1/health on a fresh connection; resolves with the status, or 'no answer' after 5 s. */
function health(base: string): Promise<number | string> {
  return new Promise((resolve) => {
    const request = get(`${base}/health`, { agent: false, timeout: 5000 }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('timeout', () => {
      request.destroy();
      resolve('no answer');
    });
    request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });
}

describe.skipIf(!REDIS_URL)(
  `crm-export serve --workers: faults and shutdown${REDIS_URL ? '' : ' (skipped: set REDIS_URL)'}`,
  { timeout: 60_000 },
  () => {
    const tmp = tempDir();
    const db = tmp.db('workers-lifecycle');
    let key: string;
    let team: string;

    beforeAll(async () => {
      const demo = await cliJson<{ teams: string[] }>(['demo', '--db', db, '--teams', '1', '--leads', '4', '--json']);
      team = demo.teams[0] as string;
      const args = ['admin', 'integrations', 'create', '--db', db, '--teams', team, '--name', 'Workers', '--json'];
      key = (await cliJson<{ key: string }>(args)).key;
      expect((await runCli(['admin', 'feed', 'capture', '--db', db])).code).toBe(0);
    }, 60_000);
    afterAll(() => tmp.remove());

    const env = (limits: Record<string, number>, extra: Record<string, string> = {}) => ({
      REDIS_URL: REDIS_URL as string,
      CRM_EXPORT_LIMITS: JSON.stringify(limits),
      ...extra,
    });
    const workers = (limits: Record<string, number>, extra: Record<string, string> = {}): Promise<RunningCli> =>
      startCli(['serve', '--db', db, '--port', '0', '--workers', '2'], env(limits, extra));

    it('after a worker is SIGKILLed, the next 20 connections are all answered by the live worker, and it is replaced', async () => {
      const server = await workers({ workerRestartMs: 1000 });
      try {
        const [victim] = workerPids(server.pid);
        process.kill(victim as number, 'SIGKILL');
        const answers: Array<number | string> = [];
        for (let i = 0; i < 20; i++) answers.push(await health(server.base));
        expect(answers).toEqual(Array(20).fill(200));
        await waitFor(server.stderr, `(pid ${victim}) exited with SIGKILL; starting a new one in 1000 ms`);
        await waitFor(() => String(workerPids(server.pid).filter((pid) => pid !== victim).length), '2');
      } finally {
        expect(await server.stop()).toBe(0);
      }
    });

    it('SIGTERM with a request in flight in a worker: it is answered, the workers exit before the primary, which exits 0, and no worker fails with ERR_IPC_DISCONNECTED', async () => {
      const server = await workers({ shutdownGraceMs: 10_000 }, { LOG_LEVEL: 'info' });
      const pids = workerPids(server.pid);
      expect(pids).toHaveLength(2);
      const { head, body } = searchRequest(key, team, true);
      const trickled = rawConnect(server.base, head + body.slice(0, 5));
      await waitFor(trickled.received, CONTINUE);

      process.kill(server.pid, 'SIGTERM');
      // Both workers are draining before the rest of the body arrives.
      await waitFor(() => String(count(server.stderr(), '"msg":"shutting down"')), '2');
      trickled.socket.write(body.slice(5));
      const answer = (await trickled.closed).slice(CONTINUE.length);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(answer.toLowerCase()).toContain('connection: close');

      const code = await server.processExit;
      const workersAliveAtExit = pids.filter(alive);
      expect(code).toBe(0);
      expect(workersAliveAtExit).toEqual([]);
      await server.exited;
      expect(count(server.stderr(), '"msg":"stopped"')).toBe(2);
      expect(server.stderr()).not.toContain('ERR_IPC_DISCONNECTED');
      expect(server.stderr()).not.toContain('starting a new one');
    });

    it('Ctrl+C (SIGINT to the whole process group) drains each worker once: the request in flight is answered and the primary exits 0', async () => {
      const server = await startCli(
        ['serve', '--db', db, '--port', '0', '--workers', '2'],
        env({ shutdownGraceMs: 10_000 }, { LOG_LEVEL: 'info' }),
        { detached: true },
      );
      const { head, body } = searchRequest(key, team, true);
      const trickled = rawConnect(server.base, head + body.slice(0, 5));
      await waitFor(trickled.received, CONTINUE);

      // What a terminal does on Ctrl+C: every process of the group gets SIGINT, workers included; the
      // primary's own request to drain must not count as their second signal.
      process.kill(-server.pid, 'SIGINT');
      await waitFor(() => String(count(server.stderr(), '"msg":"shutting down"')), '2');
      trickled.socket.write(body.slice(5));
      expect((await trickled.closed).slice(CONTINUE.length)).toMatch(/^HTTP\/1\.1 200 /);
      expect(await server.exited).toBe(0);
      expect(count(server.stderr(), '"msg":"shutting down"')).toBe(2);
      expect(server.stderr()).not.toContain('second signal');
    });

    it('a busy port is reported with its number and the primary exits non-zero instead of hanging', async () => {
      const taken = createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      const port = (taken.address() as { port: number }).port;
      try {
        const started = Date.now();
        const result = await runCli(['serve', '--db', db, '--port', String(port), '--workers', '2'], {
          env: env({}),
        });
        expect(result.code).toBe(1);
        expect(result.stderr).toContain(`cannot listen on 127.0.0.1:${port}: port ${port} is already in use`);
        expect(result.stdout).not.toContain('is serving');
        expect(Date.now() - started).toBeLessThan(15_000);
      } finally {
        taken.close();
      }
    });

    it('workers that keep dying at start: the primary gives up after workerStartFailures in a row with a clear message and exits non-zero', async () => {
      // Every worker exits at once (code 3) while the primary runs: a module Node loads before the
      // command, acting only where the primary's worker index is set. A bad setting no longer serves
      // here: the primary checks every setting before it forks.
      const crash = '--import=data:text/javascript,if(process.env.CRM_EXPORT_WORKER_INDEX)process.exit(3)';
      const result = await runCli(['serve', '--db', db, '--port', '0', '--workers', '2'], {
        env: env({ workerRestartMs: 100, workerStartFailures: 3 }, { NODE_OPTIONS: crash }),
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('giving up: 3 workers in a row died before listening; the last:');
      expect(result.stderr).toMatch(/the last: exited with .*3/);
      expect(result.stdout).not.toContain('is serving');
    });
  },
);
