import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fmtInt, fmtRatio, type LoadPlan, measure, ratio, type ServerProcess, table, type Variant } from './harness.js';
import { BENCH_TEAM, type LeadData, postgresLeads, sqliteLeads } from './lead-data.js';
import { startApi } from './list-bench.js';

// Issue 5: the list endpoint and the feed on PostgreSQL as ratios against the same on SQLite (same
// leads in both, same access control), and single-record reads on PostgreSQL against a plain SELECT
// of the same row through pg in a process of its own, same concurrency.

export interface PgBenchOptions {
  plan: LoadPlan;
  leads: number;
}

/** Ids a single-record load cycles through (spread over the data, so it is not one cached row). */
const SAMPLE_IDS = 100;

interface SelectProcess {
  run(seconds: number, connections: number): Promise<number>;
  stop(): Promise<void>;
}

async function startSelect(data: LeadData, ids: string[], rows: 1 | 3): Promise<SelectProcess> {
  const child: ChildProcess = fork(
    fileURLToPath(new URL('./pg-select.ts', import.meta.url)),
    [JSON.stringify({ url: data.url, schema: data.schema, ids, rows })],
    { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  await new Promise((resolve) => child.once('message', resolve));
  return {
    run: (seconds, connections) =>
      new Promise((resolve, reject) => {
        child.once('message', (m: { rps?: number; error?: string }) =>
          m.rps === undefined ? reject(new Error(m.error)) : resolve(m.rps),
        );
        child.send({ seconds, connections });
      }),
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.send({ stop: true });
      }),
  };
}

export async function pgBench(options: PgBenchOptions): Promise<string> {
  const { plan } = options;
  const lite = await sqliteLeads(options.leads);
  const pgData = await postgresLeads(options.leads);
  const stoppers: { stop(): Promise<void> }[] = [];
  try {
    const sqliteApi: ServerProcess = await startApi({ url: lite.url, access: 'memory' });
    stoppers.push(sqliteApi);
    const pgApi: ServerProcess = await startApi({ url: pgData.url, schema: pgData.schema as string, access: 'memory' });
    stoppers.push(pgApi);
    const step = Math.max(1, Math.floor(options.leads / SAMPLE_IDS));
    const ids = Array.from({ length: Math.min(SAMPLE_IDS, options.leads) }, (_, i) => `lead_B${i * step}`);
    const select1 = await startSelect(pgData, ids, 1);
    stoppers.push(select1);
    const select3 = await startSelect(pgData, ids, 3);
    stoppers.push(select3);
    const auth = (data: LeadData) => ({ authorization: `Bearer ${data.key}`, 'service-team': BENCH_TEAM });

    const pair = (name: string, path: string): Variant[] => [
      { name: `${name}-sqlite`, url: `${sqliteApi.origin}${path}`, headers: auth(lite), server: sqliteApi },
      { name: `${name}-pg`, url: `${pgApi.origin}${path}`, headers: auth(pgData), server: pgApi },
    ];
    // autocannon sends the same URL every time: the single-record load reads one lead; the plain
    // SELECT cycles through ids, which on a table this size all sit in the buffer cache alike.
    const variants: Variant[] = [
      ...pair('list', '/v1/leads?limit=100'),
      ...pair('feed', '/v1/sync/changes?limit=100'),
      ...pair('get', `/v1/leads/${ids[0]}`),
      { name: 'select1', run: (s, c) => select1.run(s, c) },
      { name: 'select3', run: (s, c) => select3.run(s, c) },
    ];
    process.stderr.write(`pg: ${fmtInt(options.leads)} leads in SQLite and PostgreSQL\n`);
    const m = await measure(variants, plan);
    const get = (name: string) => m.get(name) as NonNullable<ReturnType<typeof m.get>>;
    const row = (label: string, name: string, baseline: string) => [
      label,
      fmtInt(get(name).median),
      fmtInt(get(baseline).median),
      fmtRatio(ratio(get(name), get(baseline))),
      fmtInt(get(name).cpuUsPerRequest),
      fmtInt(get(baseline).cpuUsPerRequest),
    ];
    return [
      `### Issue 5: PostgreSQL against SQLite and against plain queries (${fmtInt(options.leads)} leads, ${plan.connections} connections, ${plan.rounds} x ${plan.seconds} s)`,
      '',
      table(
        ['measurement', 'req/s (median)', 'baseline req/s', 'req/s ratio', 'API CPU µs/req', 'baseline API CPU µs/req'],
        ['l', 'r', 'r', 'r', 'r', 'r'],
        [
          row('GET /v1/leads?limit=100: PostgreSQL / SQLite', 'list-pg', 'list-sqlite'),
          row('GET /v1/sync/changes?limit=100 (first page): PostgreSQL / SQLite', 'feed-pg', 'feed-sqlite'),
          row('GET /v1/leads/{id}: PostgreSQL / SQLite', 'get-pg', 'get-sqlite'),
          row('GET /v1/leads/{id} on PostgreSQL / plain SELECT of the lead row (pg)', 'get-pg', 'select1'),
          row(
            'GET /v1/leads/{id} on PostgreSQL / plain SELECTs of the lead and its 2 facets (pg)',
            'get-pg',
            'select3',
          ),
        ],
      ),
      '',
    ].join('\n');
  } finally {
    for (const s of stoppers) await s.stop();
  }
}
