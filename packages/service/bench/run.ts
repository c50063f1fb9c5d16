import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { authBench } from './auth-bench.js';
import { dbFaultBench } from './db-fault-bench.js';
import type { LoadPlan } from './harness.js';
import { intakeBench } from './intake-bench.js';
import { CACHE_DIR } from './lead-data.js';
import { listBench } from './list-bench.js';
import { observeBench } from './observe-bench.js';
import { pgBench } from './pg-bench.js';
import { redisFaultBench } from './redis-fault-bench.js';
import { memoryBench, startBench } from './start-memory-bench.js';
import { usageBench } from './usage-bench.js';
import { writeBench } from './write-bench.js';

// `npm run bench`: every benchmark of the issues in one run. Each prints a markdown table of ratios
// against a baseline measured in the same run; the whole report goes to .bench/results.md too.
// docs/performance.md explains what each one measures and the figures measured so far.

const BENCHES = [
  'list',
  'auth',
  'pg',
  'feed',
  'mirror',
  'redis',
  'db',
  'retention',
  'observe',
  'usage',
  'ingest',
  'start',
  'memory',
  'intake',
] as const;
type Bench = (typeof BENCHES)[number];

const USAGE = `npm run bench -- [options]
  --only list,auth,pg,feed,mirror,redis,db,retention,observe,usage,ingest,intake,start,memory   benchmarks to run (default: all)
                             list: the read path (uncached and cached pages and a single
                             lead vs a bare server, deep page, memory)
                             auth: issue 3 (authentication and limiter cost)
                             pg:   PostgreSQL vs SQLite, and vs a plain SELECT
                             feed: initial sync (bench/initial-sync.ts)
                             mirror: the reference consumer's initial sync into SQLite
                             (packages/client/bench/run.ts)
                             redis: list latency with Redis healthy vs hung by SIGSTOP (on
                             a redis-server of its own; skipped without redis-server on PATH)
                             db: list latency on PostgreSQL healthy vs while the API's own
                             backends are terminated every --kill-every ms; 503s, time to recovery
                             retention: longest event-loop stall of feed retention on SQLite,
                             one statement vs batches (bench/retention.ts)
                             observe: the request log and the metrics on against off
                             (bench/observe-bench.ts)
                             usage: list throughput with last use, usage counts and the request
                             log recorded against not, SQLite and PostgreSQL with 2 workers
                             (bench/usage-bench.ts)
                             ingest: the write side: crm-export ingest of one NDJSON file of
                             every event type into SQLite and PostgreSQL, demo generation on
                             both against the same rows written by the store alone, bytes on
                             disk per demo lead (bench/write-bench.ts)
                             intake: the intake endpoint against ingest of the same events from a
                             file (SQLite and PostgreSQL), and outbox commit to feed latency through
                             crm-export relay at steady rates (bench/intake-bench.ts)
                             start: spawn of crm-export serve to the first 200 of /v1/health on
                             an empty database, --start-leads leads and the list data set,
                             against a bare node http server (bench/start-memory-bench.ts)
                             memory: a fresh API's anonymous memory after the list loads and
                             30 s idle, twice, against after start (bench/start-memory-bench.ts)
  --quick                    short run: 1 round of 3 s, 20,200 leads for the list data set
  --seconds N                seconds per measurement (default 10)
  --warm-up N                warm-up seconds per variant (default 3)
  --rounds N                 interleaved rounds per measurement (default 3)
  --connections N            concurrent connections (default 10)
  --large N                  leads of the list data set (default 1,000,000)
  --leads N                  leads for the auth and pg benchmarks (default 10,000)
  --sync-sizes A,B           feed items for the initial-sync benchmark, pg:N for PostgreSQL's N leads
                             (default 10000,1000000,pg:100000; --quick 100000,pg:10000)
  --ingest-leads N           ingest: demo leads in the ingest file (default 2,000; --quick 400)
  --demo-leads N             ingest: leads of the demo run (default 2,000; --quick 400)
  --intake-leads N           intake: demo leads of the events posted and ingested (default 2,000; --quick 400)
  --intake-rates A,B         intake: events/s of the latency measurements (default 500,2000)
  --start-leads N            start: leads of the small database (default 5,000)
  --kill-every N             db: milliseconds between two terminations of the API's backends (default 500)
  --profile                  CPU-profile the API under the list loads (.bench/profiles/)
  --before DIR               list: also run the API of another checkout of this package (DIR holds
                             its bench/ and a built dist/), interleaved, for before/after figures of one run
  --api-node-flags FLAGS     list: node flags for its API processes, space-separated (e.g.
                             --max-old-space-size=128, a heap cap as an operator would set it)
  --redis URL                Redis for the limiter (default REDIS_URL or redis://127.0.0.1:6379)
  --out FILE                 where the report goes (default .bench/results.md)`;

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    quick: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    'warm-up': { type: 'string' },
    rounds: { type: 'string' },
    connections: { type: 'string' },
    large: { type: 'string' },
    leads: { type: 'string' },
    'sync-sizes': { type: 'string' },
    'kill-every': { type: 'string' },
    'start-leads': { type: 'string' },
    'ingest-leads': { type: 'string' },
    'demo-leads': { type: 'string' },
    'intake-leads': { type: 'string' },
    'intake-rates': { type: 'string' },
    profile: { type: 'boolean', default: false },
    before: { type: 'string' },
    'api-node-flags': { type: 'string' },
    redis: { type: 'string' },
    out: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

function count(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} takes a positive whole number, not ${value}`);
  return n;
}

const quick = values.quick;
const only = (values.only?.split(',') ?? [...BENCHES]).map((s) => s.trim());
for (const name of only) {
  if (!(BENCHES as readonly string[]).includes(name)) throw new Error(`--only: unknown benchmark ${name}\n${USAGE}`);
}
const plan: LoadPlan = {
  seconds: count('seconds', values.seconds, quick ? 3 : 10),
  warmUpSeconds: count('warm-up', values['warm-up'], quick ? 1 : 3),
  rounds: count('rounds', values.rounds, quick ? 1 : 3),
  connections: count('connections', values.connections, 10),
};
// --quick: 20,200 leads, so the deep page is 20,000 records in and the data builds in well under a minute.
const large = count('large', values.large, quick ? 20_200 : 1_000_000);
const leads = count('leads', values.leads, 10_000);
const startLeads = count('start-leads', values['start-leads'], 5_000);
const killEveryMs = count('kill-every', values['kill-every'], 500);
const ingestLeads = count('ingest-leads', values['ingest-leads'], quick ? 400 : 2_000);
const demoLeads = count('demo-leads', values['demo-leads'], quick ? 400 : 2_000);
const intakeLeads = count('intake-leads', values['intake-leads'], quick ? 400 : 2_000);
const intakeRates = (values['intake-rates'] ?? '500,2000').split(',').map((rate) => count('intake-rates', rate, 500));
// --quick walks 100,000 items: 1,000 pages, enough for the JIT of the server and the client to settle
// (at 10,000 their warm-up is most of the walk).
const syncSizes =
  values['sync-sizes']?.split(',') ?? (quick ? ['100000', 'pg:10000'] : ['10000', '1000000', 'pg:100000']);
const redisUrl = values.redis ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A benchmark script with its own arguments and output (bench/initial-sync.ts, the client's), run as a child. */
function script(path: string, args: readonly string[]): Promise<string> {
  const file = fileURLToPath(new URL(path, import.meta.url));
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', file, ...args],
      { maxBuffer: 16 * 1024 * 1024 },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    );
    child.stderr?.pipe(process.stderr);
  });
}

const load = () =>
  loadavg()
    .map((n) => n.toFixed(1))
    .join(', ');
const header = [
  '# Benchmark results',
  '',
  `Run ${new Date().toISOString()}: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}, load average at start ${load()}.`,
  `Arguments: ${process.argv.slice(2).join(' ') || '(defaults)'}; ${plan.rounds} round(s) of ${plan.seconds} s per variant after ${plan.warmUpSeconds} s warm-up, ${plan.connections} connections.`,
  'Ratios are medians of per-round ratios; the variants of a benchmark run interleaved, round after round.',
  '',
].join('\n');
process.stdout.write(`${header}\n`);

const sections: string[] = [header];
const failures: string[] = [];
const runners: Record<Bench, () => Promise<string>> = {
  list: () =>
    listBench({
      plan,
      leads: large,
      ...(values.profile ? { profileDir: `${CACHE_DIR}profiles` } : {}),
      ...(values.before ? { beforeDir: values.before } : {}),
      ...(values['api-node-flags'] ? { apiNodeFlags: values['api-node-flags'].split(' ').filter(Boolean) } : {}),
    }),
  auth: () => authBench({ plan, leads, redisUrl }),
  pg: () => pgBench({ plan, leads }),
  // --quick: two interleaved rounds instead of five, each of which starts its servers anew (with three,
  // --quick took 330 s on a 2-core machine, past the 5 minutes it is meant for).
  feed: () => script('./initial-sync.ts', [...(quick ? ['--rounds', '2'] : []), ...syncSizes]),
  // The sync engine's initial sync of 1,000,000 records (100,000 with --quick) against the feed read alone.
  mirror: () => script('../../client/bench/run.ts', ['--records', quick ? '100000' : '1000000']),
  redis: () => redisFaultBench({ plan, leads }),
  db: () => dbFaultBench({ plan, leads, killEveryMs }),
  // Feed retention over 1,000,000 rows (100,000 with --quick): the old one-statement rule against batches.
  retention: () => script('./retention.ts', [quick ? '100000' : '1000000']),
  // --quick: log and metrics both off against both on (with the four variants --quick took 330 s).
  observe: () => observeBench({ plan, leads, quick }),
  // Recording on against off: SQLite in one process, PostgreSQL with two workers.
  usage: () => usageBench({ plan, leads }),
  // Spawn to first answer: 3 rounds at least (a median of three); the large database is the list data set.
  start: () => startBench({ rounds: plan.rounds, smallLeads: startLeads, largeLeads: large }),
  memory: () => memoryBench({ plan, leads: large }),
  ingest: () => writeBench({ ingestLeads, demoLeads }),
  intake: () => intakeBench({ leads: intakeLeads, seconds: plan.seconds, rates: intakeRates, batch: 500 }),
};
// How long each benchmark took (the --quick run has a budget of 5 minutes in all, set-up included).
const timings: string[] = [];
const runStarted = performance.now();
const seconds = (since: number) => Math.round((performance.now() - since) / 1000);
for (const name of BENCHES) {
  if (!only.includes(name)) continue;
  const started = performance.now();
  try {
    const section = await runners[name]();
    sections.push(section);
    process.stdout.write(`${section}\n`);
  } catch (error) {
    // One failing benchmark (say, PostgreSQL down) still leaves the others' results.
    const message = `### ${name}: failed\n\n${error instanceof Error ? error.message : String(error)}\n`;
    failures.push(name);
    sections.push(message);
    process.stdout.write(`${message}\n`);
  }
  timings.push(`${name} ${seconds(started)} s`);
}
const timing = `Time: ${timings.join(', ')}; ${seconds(runStarted)} s in all (the build before it not counted).`;
process.stdout.write(`${timing}\n`);
sections.push(`${timing}\n`, `Load average at end: ${load()}.\n`);
const out = values.out ?? `${CACHE_DIR}results.md`;
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, sections.join('\n'));
process.stdout.write(`Results written to ${out}\n`);
if (failures.length > 0) process.exitCode = 1;
