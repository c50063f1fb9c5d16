import { ACCESS_MODE_LABELS, ACCESS_MODES, type AccessMode } from './bench-access.js';
import { fmtInt, fmtRatio, type LoadPlan, measure, ratio, type ServerProcess, table, type Variant } from './harness.js';
import { sqliteLeads } from './lead-data.js';
import { startApi } from './list-bench.js';
import { redisFloor } from './redis-floor.js';

// Issue 3: what authentication and the limiter cost. The same routes served by four API processes that
// differ only in their AccessControl (bench-access.ts), as ratios against the one that checks nothing.

export interface AuthBenchOptions {
  plan: LoadPlan;
  leads: number;
  redisUrl: string;
}

const ROUTES = [
  { path: '/v1/leads?limit=100', label: 'GET /v1/leads?limit=100 (sync class)' },
  { path: '/v1/me', label: 'GET /v1/me (read class)' },
] as const;

/** Guards the comparison: (a) must take a wrong key, the others must refuse it and take the real one. */
async function checkVariants(servers: Map<AccessMode, ServerProcess>, key: string): Promise<void> {
  const wrongKey = `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
  for (const [mode, server] of servers) {
    const status = async (k: string) =>
      (await fetch(`${server.origin}/v1/me`, { headers: { authorization: `Bearer ${k}` } })).status;
    const [real, wrong] = [await status(key), await status(wrongKey)];
    const expectedWrong = mode === 'open' ? 200 : 401;
    if (real !== 200 || wrong !== expectedWrong) {
      throw new Error(`${mode}: real key got ${real}, wrong key got ${wrong} (expected 200 and ${expectedWrong})`);
    }
  }
}

export async function authBench(options: AuthBenchOptions): Promise<string> {
  const data = await sqliteLeads(options.leads);
  const servers = new Map<AccessMode, ServerProcess>();
  try {
    for (const mode of ACCESS_MODES) {
      servers.set(mode, await startApi({ url: data.url, access: mode, redisUrl: options.redisUrl }));
    }
    const headers = { authorization: `Bearer ${data.key}` };
    await checkVariants(servers, data.key);
    const sections: string[] = [
      `### Issue 3: cost of authentication and of the limiter (SQLite, ${fmtInt(data.leads)} leads, ${options.plan.connections} connections, ${options.plan.rounds} x ${options.plan.seconds} s)`,
      '',
    ];
    /** The list route's CPU per request with the memory and the Redis limiter, for the round trip's floor. */
    let listCpu: { memory: number; redis: number } | undefined;
    for (const route of ROUTES) {
      process.stderr.write(`auth: ${route.path}\n`);
      const variants: Variant[] = ACCESS_MODES.map((mode) => ({
        name: mode,
        url: `${servers.get(mode)?.origin}${route.path}`,
        headers,
        server: servers.get(mode) as ServerProcess,
      }));
      const m = await measure(variants, options.plan);
      const open = m.get('open');
      if (!open) throw new Error('no baseline');
      const [memory, redis] = [m.get('memory'), m.get('redis')];
      if (route === ROUTES[0] && memory && redis) {
        listCpu = { memory: memory.cpuUsPerRequest, redis: redis.cpuUsPerRequest };
      }
      sections.push(
        `${route.label}`,
        '',
        table(
          [
            'access control',
            'req/s (median)',
            'p99 ms',
            'req/s ratio to (a)',
            'server CPU µs/req',
            'CPU/req ratio to (a)',
          ],
          ['l', 'r', 'r', 'r', 'r', 'r'],
          ACCESS_MODES.map((mode) => {
            const r = m.get(mode) as NonNullable<ReturnType<typeof m.get>>;
            return [
              ACCESS_MODE_LABELS[mode],
              fmtInt(r.median),
              String(r.p99Ms),
              fmtRatio(ratio(r, open)),
              fmtInt(r.cpuUsPerRequest),
              fmtRatio(r.cpuUsPerRequest / open.cpuUsPerRequest),
            ];
          }),
        ),
        '',
      );
      if (memory && redis) {
        // Issue 30's goal: the Redis limiter at least 0.85 of the memory limiter, per round, in this run.
        sections.push(
          `Redis limiter / memory limiter: ${fmtRatio(ratio(redis, memory))} req/s (median of the rounds' ratios), CPU per request ${fmtRatio(redis.cpuUsPerRequest / memory.cpuUsPerRequest)}`,
          '',
        );
      }
    }
    if (listCpu) sections.push(...(await floorSection(options, listCpu)));
    return sections.join('\n');
  } finally {
    for (const server of servers.values()) await server.stop();
  }
}

/**
 * The Redis limiter's one round trip per request, measured alone (redis-floor.ts), beside what it adds to a
 * list request: whatever the API does around it, a request limited on Redis costs at least the memory
 * limiter's request plus the round trip, on the client and (on a shared machine) in redis-server.
 */
async function floorSection(options: AuthBenchOptions, cpu: { memory: number; redis: number }): Promise<string[]> {
  process.stderr.write('auth: Redis round trip alone\n');
  const floor = await redisFloor(options.redisUrl, options.plan.seconds);
  const rows = floor.map((f) => {
    const best = f.serverCpuUs === null ? null : cpu.memory / (cpu.memory + f.clientCpuUs + f.serverCpuUs);
    return [
      `the charge script, ${f.inFlight} in flight`,
      fmtInt(f.callsPerSecond),
      f.clientCpuUs.toFixed(1),
      f.serverCpuUs === null ? '-' : f.serverCpuUs.toFixed(1),
      best === null ? '-' : fmtRatio(best),
    ];
  });
  return [
    `Redis round trip alone (the limiter's charge script from one client; list request CPU: memory limiter ${fmtInt(cpu.memory)} µs, Redis limiter ${fmtInt(cpu.redis)} µs, so the API adds ${fmtInt(cpu.redis - cpu.memory)} µs)`,
    '',
    table(
      ['calls', 'calls/s', 'client CPU µs/call', 'redis-server CPU µs/call', 'best Redis / memory (CPU)'],
      ['l', 'r', 'r', 'r', 'r'],
      rows,
    ),
    '',
    "best Redis / memory: the memory-limited request's CPU over itself plus the call's client and server CPU, both on this machine's cores.",
    '',
  ];
}
