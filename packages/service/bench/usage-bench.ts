import pg from 'pg';
import { fmtInt, fmtRatio, type LoadPlan, load, type ServerProcess, startServerProcess, table } from './harness.js';
import { BENCH_TEAM, type LeadData, postgresLeads, sqliteLeads } from './lead-data.js';
import { SqliteStore } from './service.js';
import type { UsageServerConfig } from './usage-server.js';

// What recording last use, usage counts and the request log costs the public API (docs/request-log.md,
// issue 28 item 5): list throughput with recording on against off, in one run, rounds interleaved. On SQLite
// with one process, and on PostgreSQL with two workers sharing the port (node:cluster, as
// `serve --workers 2`). Goal: on / off >= 0.95. The request is the cached first list page, the cheapest
// list answer, where a fixed cost per request shows most. The rows the run recorded are deleted afterwards,
// so the cached bench data stays as it was.
//
// On and off are loaded at the same time, each with its own connections, round after round: on a shared
// machine whose load moves from one second to the next, two loads one after the other saw ratios from 0.2
// to 4, while two loads side by side meet the same load. Each round's ratio is on's requests over off's;
// the figure is the median over the rounds. Both compete for the same cores, so a server that spends more
// CPU per request answers fewer of them.

const PATH = '/v1/leads?limit=100';

async function start(config: UsageServerConfig): Promise<ServerProcess> {
  return startServerProcess('./usage-server.ts', [JSON.stringify(config)]);
}

/** Deletes what the run recorded in the bench data (both backends). */
async function forget(data: LeadData): Promise<void> {
  const statements = ['DELETE FROM request_log', 'DELETE FROM usage_counts', 'DELETE FROM last_use'];
  if (data.url.startsWith('sqlite:')) {
    const store = new SqliteStore({ path: data.url.slice('sqlite:'.length) });
    await store.migrate();
    await store.close();
    const { openSqliteFile } = await import('../test/support/sqlite-file.js');
    const db = openSqliteFile(data.url.slice('sqlite:'.length));
    for (const statement of statements) db.exec(statement);
    db.close();
    return;
  }
  const client = new pg.Client({ connectionString: data.url });
  await client.connect();
  try {
    for (const statement of statements) await client.query(`${statement.replace('FROM ', `FROM ${data.schema}.`)}`);
  } finally {
    await client.end();
  }
}

async function requestRows(data: LeadData): Promise<number> {
  if (data.url.startsWith('sqlite:')) {
    const { openSqliteFile } = await import('../test/support/sqlite-file.js');
    const db = openSqliteFile(data.url.slice('sqlite:'.length), { readonly: true });
    const row = db.prepare('SELECT count(*) AS n FROM request_log').get() as { n: number };
    db.close();
    return row.n;
  }
  const client = new pg.Client({ connectionString: data.url });
  await client.connect();
  try {
    return Number((await client.query(`SELECT count(*) AS n FROM ${data.schema}.request_log`)).rows[0].n);
  } finally {
    await client.end();
  }
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

interface SideBySide {
  /** Median requests per second of each. */
  off: number;
  on: number;
  /** Each round's on / off, and their median. */
  ratios: number[];
  ratio: number;
  /** Median server CPU per request, µs. */
  offCpu: number;
  onCpu: number;
}

/** Loads both servers at once, `plan.rounds` times after a warm-up; any refusal fails the bench. */
async function sideBySide(
  off: ServerProcess,
  on: ServerProcess,
  path: string,
  headers: Record<string, string>,
  plan: LoadPlan,
): Promise<SideBySide> {
  const both = async (seconds: number) => {
    const before = await Promise.all([off.cpuUs(), on.cpuUs()]);
    const [a, b] = await Promise.all([
      load(`${off.origin}${path}`, headers, seconds, plan.connections),
      load(`${on.origin}${path}`, headers, seconds, plan.connections),
    ]);
    const after = await Promise.all([off.cpuUs(), on.cpuUs()]);
    for (const r of [a, b]) {
      if (r.errors > 0 || r.non2xx > 0) throw new Error(`${r.non2xx} non-2xx answers and ${r.errors} errors`);
    }
    return {
      off: a.requestsPerSecond,
      on: b.requestsPerSecond,
      offCpu: ((after[0] as number) - (before[0] as number)) / a.total,
      onCpu: ((after[1] as number) - (before[1] as number)) / b.total,
    };
  };
  if (plan.warmUpSeconds > 0) await both(plan.warmUpSeconds);
  const rounds: Awaited<ReturnType<typeof both>>[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    const r = await both(plan.seconds);
    rounds.push(r);
    process.stderr.write(`  off ${Math.round(r.off)} req/s, on ${Math.round(r.on)} req/s\n`);
  }
  const ratios = rounds.map((r) => r.on / r.off);
  return {
    off: median(rounds.map((r) => r.off)),
    on: median(rounds.map((r) => r.on)),
    ratios,
    ratio: median(ratios),
    offCpu: median(rounds.map((r) => r.offCpu)),
    onCpu: median(rounds.map((r) => r.onCpu)),
  };
}

export async function usageBench(options: { plan: LoadPlan; leads: number; postgres?: boolean }): Promise<string> {
  const { plan } = options;
  const sets: { label: string; data: LeadData; workers: number }[] = [
    { label: 'SQLite, 1 process', data: await sqliteLeads(options.leads), workers: 1 },
  ];
  if (options.postgres ?? true) {
    sets.push({ label: 'PostgreSQL, 2 workers', data: await postgresLeads(options.leads), workers: 2 });
  }
  const rows: string[][] = [];
  for (const { label, data, workers } of sets) {
    const base = { url: data.url, ...(data.schema ? { schema: data.schema } : {}), workers };
    const servers: ServerProcess[] = [];
    try {
      const off = await start({ ...base, requestLog: false });
      servers.push(off);
      const on = await start({ ...base, requestLog: true });
      servers.push(on);
      const headers = { authorization: `Bearer ${data.key}`, 'service-team': BENCH_TEAM };
      process.stderr.write(`usage: ${label}, ${fmtInt(options.leads)} leads\n`);
      const m = await sideBySide(off, on, `${PATH}`, headers, plan);
      for (const server of servers.splice(0)) await server.stop();
      const recorded = await requestRows(data);
      rows.push([
        label,
        fmtInt(m.off),
        fmtInt(m.on),
        fmtRatio(m.ratio),
        m.ratios.map(fmtRatio).join(' '),
        fmtInt(m.offCpu),
        fmtInt(m.onCpu),
        fmtInt(recorded),
      ]);
    } finally {
      for (const server of servers) await server.stop();
      await forget(data);
    }
  }
  return [
    `### Recording last use, usage and the request log (${fmtInt(options.leads)} leads, ${plan.connections} connections, ${plan.rounds} x ${plan.seconds} s)`,
    '',
    `\`GET ${PATH}\` (page cache), recording on and off loaded side by side, ${plan.connections} connections each. Goal: on / off >= 0.95.`,
    '',
    table(
      [
        'backend',
        'off req/s',
        'on req/s',
        'on / off (median)',
        'per round',
        'off CPU µs/req',
        'on CPU µs/req',
        'log rows written',
      ],
      ['l', 'r', 'r', 'r', 'l', 'r', 'r', 'r'],
      rows,
    ),
    '',
  ].join('\n');
}
