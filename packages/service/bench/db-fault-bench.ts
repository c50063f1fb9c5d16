import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { fmtInt, type LoadPlan, type ServerProcess, table } from './harness.js';
import { BENCH_TEAM, postgresLeads } from './lead-data.js';
import { startApi } from './list-bench.js';

// The latency killed database connections add to list requests. One API process on PostgreSQL
// (page cache off, so every request reads the database) is loaded with GET /v1/leads?limit=100 while
// PostgreSQL is healthy, then while this bench terminates the API's own backends (found by a unique
// application_name) every `killEveryMs`, then healthy again. The load is driven here, request by request,
// so each answer's status and timing are known: the 503s a kill causes and how soon requests succeed again.

export interface DbFaultBenchOptions {
  plan: LoadPlan;
  leads: number;
  /** Milliseconds between two terminations of the API's backends. */
  killEveryMs: number;
}

interface Sample {
  start: number;
  end: number;
  status: number;
}

/** `connections` loops sending the request one after the other for `seconds`; every answer's status and times. */
async function drive(
  url: string,
  headers: Record<string, string>,
  seconds: number,
  connections: number,
): Promise<Sample[]> {
  const samples: Sample[] = [];
  const until = performance.now() + seconds * 1000;
  const loop = async () => {
    while (performance.now() < until) {
      const start = performance.now();
      let status: number;
      try {
        const response = await fetch(url, { headers });
        await response.arrayBuffer();
        status = response.status;
      } catch {
        status = 0;
      }
      samples.push({ start, end: performance.now(), status });
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  return samples;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

interface Phase {
  name: string;
  requests: number;
  p50: number;
  p99: number;
  max: number;
  unavailable: number;
  other: number;
  kills: number;
  backends: number;
  /** Per kill: ms from the kill until a request started after it answered 200. */
  recovery: number[];
}

function summarise(name: string, samples: Sample[], kills: number[] = [], backends = 0): Phase {
  const latencies = samples.map((s) => s.end - s.start).sort((a, b) => a - b);
  const recovery: number[] = [];
  for (const at of kills) {
    let first = Number.POSITIVE_INFINITY;
    for (const s of samples) if (s.status === 200 && s.start >= at && s.end < first) first = s.end;
    if (Number.isFinite(first)) recovery.push(first - at);
  }
  return {
    name,
    requests: samples.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies[latencies.length - 1] ?? Number.NaN,
    unavailable: samples.filter((s) => s.status === 503).length,
    other: samples.filter((s) => s.status !== 200 && s.status !== 503).length,
    kills: kills.length,
    backends,
    recovery: recovery.sort((a, b) => a - b),
  };
}

const ms = (n: number) => (Number.isNaN(n) ? '-' : n < 10 ? n.toFixed(1) : fmtInt(n));

export async function dbFaultBench(options: DbFaultBenchOptions): Promise<string> {
  const { plan, killEveryMs } = options;
  const data = await postgresLeads(options.leads);
  const applicationName = `crm-export-bench-${randomBytes(4).toString('hex')}`;
  const killer = new pg.Client({ connectionString: data.url, application_name: 'crm-export-bench-killer' });
  await killer.connect();
  let api: ServerProcess | undefined;
  try {
    api = await startApi({
      url: data.url,
      schema: data.schema as string,
      access: 'memory',
      pageCache: false,
      applicationName,
    });
    const url = `${api.origin}/v1/leads?limit=100`;
    const headers = { authorization: `Bearer ${data.key}`, 'service-team': BENCH_TEAM };
    process.stderr.write(`db: healthy, then backends terminated every ${killEveryMs} ms, then healthy\n`);
    await drive(url, headers, plan.warmUpSeconds, plan.connections);
    const phases: Phase[] = [
      summarise('PostgreSQL healthy', await drive(url, headers, plan.seconds, plan.connections)),
    ];

    const kills: number[] = [];
    let backends = 0;
    let killing = Promise.resolve();
    const timer = setInterval(() => {
      killing = killing.then(async () => {
        kills.push(performance.now());
        const { rows } = await killer.query<{ n: string }>(
          'SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE application_name = $1',
          [applicationName],
        );
        backends += Number(rows[0]?.n ?? 0);
      });
    }, killEveryMs);
    const faulty = await drive(url, headers, plan.seconds, plan.connections);
    clearInterval(timer);
    await killing;
    phases.push(summarise(`backends terminated every ${killEveryMs} ms`, faulty, kills, backends));
    phases.push(summarise('PostgreSQL healthy again', await drive(url, headers, plan.seconds, plan.connections)));

    for (const p of phases) {
      process.stderr.write(
        `  ${p.name}: p50 ${ms(p.p50)} ms, p99 ${ms(p.p99)} ms, max ${ms(p.max)} ms, 503s ${p.unavailable}\n`,
      );
    }
    const recovery = (p: Phase) =>
      p.recovery.length === 0
        ? '-'
        : `${ms(percentile(p.recovery, 50))} / ${ms(p.recovery[p.recovery.length - 1] as number)}`;
    return [
      `### Latency killed database connections add to list requests (PostgreSQL, ${fmtInt(data.leads)} leads, GET /v1/leads?limit=100, page cache off, ${plan.connections} connections, ${plan.seconds} s per phase)`,
      '',
      table(
        [
          'phase',
          'requests',
          'p50 ms',
          'p99 ms',
          'max ms',
          '503',
          'other non-200',
          'kills (backends ended)',
          'recovery after a kill, median / max ms',
        ],
        ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
        phases.map((p) => [
          p.name,
          fmtInt(p.requests),
          ms(p.p50),
          ms(p.p99),
          ms(p.max),
          fmtInt(p.unavailable),
          fmtInt(p.other),
          p.kills === 0 ? '-' : `${p.kills} (${p.backends})`,
          recovery(p),
        ]),
      ),
      '',
      'A kill fails only the statements running on the terminated connections: those requests answer 503',
      'service_unavailable (Retry-After 1) at once, and the next requests open new connections. "Recovery" is the',
      'time from a kill until the first request started after it answers 200, which includes opening a new',
      'connection; "other non-200" counts answers that are neither 200 nor 503 (a 500 would be a fault taken for a',
      'bug) and should be 0.',
      '',
    ].join('\n');
  } finally {
    await api?.stop();
    await killer.end();
  }
}
