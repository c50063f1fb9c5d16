import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { fmtInt, type LoadPlan, type ServerProcess, table } from './harness.js';
import { BENCH_TEAM, sqliteLeads } from './lead-data.js';
import { startApi } from './list-bench.js';
import { DEFAULT_LIMITS } from './service.js';

// The latency a hung Redis adds to list requests. One API process counts its limits on a
// redis-server this bench starts (never the shared one); GET /v1/leads?limit=100 is loaded with Redis
// healthy, then while the redis-server is stopped with SIGSTOP, then after SIGCONT, in the same run.

export interface RedisFaultBenchOptions {
  plan: LoadPlan;
  leads: number;
}

const hasRedisServer = (): boolean => {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A throw-away redis-server on a free port, answering PING. */
async function ownRedis(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return { url, child };
    } catch {
      probe.disconnect();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not start');
}

interface Phase {
  name: string;
  requests: number;
  p50: number;
  p99: number;
  max: number;
  non2xx: number;
}

async function phase(name: string, url: string, headers: Record<string, string>, plan: LoadPlan): Promise<Phase> {
  const r = await autocannon({ url, headers, duration: plan.seconds, connections: plan.connections, pipelining: 1 });
  process.stderr.write(`  ${name}: p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, max ${r.latency.max} ms\n`);
  return {
    name,
    requests: r.requests.total,
    p50: r.latency.p50,
    p99: r.latency.p99,
    max: r.latency.max,
    non2xx: r.non2xx + r.errors,
  };
}

export async function redisFaultBench(options: RedisFaultBenchOptions): Promise<string> {
  const title = '### Latency a hung Redis adds to list requests';
  if (!hasRedisServer()) return `${title}\n\nskipped: redis-server is not on PATH.\n`;
  const data = await sqliteLeads(options.leads);
  const redis = await ownRedis();
  let api: ServerProcess | undefined;
  try {
    api = await startApi({ url: data.url, access: 'redis', redisUrl: redis.url });
    const url = `${api.origin}/v1/leads?limit=100`;
    const headers = { authorization: `Bearer ${data.key}`, 'service-team': BENCH_TEAM };
    process.stderr.write('redis: healthy, then SIGSTOP, then SIGCONT\n');
    await autocannon({ url, headers, duration: options.plan.warmUpSeconds, connections: options.plan.connections });
    const phases: Phase[] = [await phase('Redis healthy', url, headers, options.plan)];
    redis.child.kill('SIGSTOP');
    phases.push(await phase('Redis hung (SIGSTOP from the first request)', url, headers, options.plan));
    redis.child.kill('SIGCONT');
    // The API's probe brings Redis back within about a second.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    phases.push(await phase('Redis resumed (SIGCONT)', url, headers, options.plan));
    const budget = DEFAULT_LIMITS.redisBudgetMs;
    return [
      `${title} (SQLite, ${fmtInt(data.leads)} leads, GET /v1/leads?limit=100, ${options.plan.connections} connections, ${options.plan.seconds} s per phase, redisBudgetMs ${budget})`,
      '',
      table(
        ['phase', 'requests', 'p50 ms', 'p99 ms', 'max ms', 'non-2xx or errors'],
        ['l', 'r', 'r', 'r', 'r', 'r'],
        phases.map((p) => [p.name, fmtInt(p.requests), String(p.p50), String(p.p99), String(p.max), String(p.non2xx)]),
      ),
      '',
      `The requests in flight when Redis stops wait one budget (${budget} ms) of Redis time at most; every later one`,
      "counts in the process's memory at once: the hung phase's max is that one budget plus the machine's own",
      'scheduling noise (compare the healthy max), and its p50 is no higher than the healthy one.',
      '',
    ].join('\n');
  } finally {
    await api?.stop();
    redis.child.kill('SIGCONT');
    redis.child.kill('SIGKILL');
  }
}
