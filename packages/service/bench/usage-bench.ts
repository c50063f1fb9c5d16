import pg from 'pg';
import {
  fmtInt,
  fmtRatio,
  type LoadPlan,
  measure,
  ratio,
  type ServerProcess,
  startServerProcess,
  table,
} from './harness.js';
import { BENCH_TEAM, type LeadData, postgresLeads, sqliteLeads } from './lead-data.js';
import { SqliteStore } from './service.js';
import type { UsageServerConfig } from './usage-server.js';

// What recording last use, usage counts and the request log costs the public API (docs/request-log.md,
// issue 28 item 5): list throughput with recording on against off, in one run, rounds interleaved. On SQLite
// with one process, and on PostgreSQL with two workers sharing the port (node:cluster, as
// `serve --workers 2`). Goal: on / off >= 0.95. The request is the cached first list page, the cheapest
// list answer, where a fixed cost per request shows most. The rows the run recorded are deleted afterwards,
// so the cached bench data stays as it was.

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
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(data.url.slice('sqlite:'.length));
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
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(data.url.slice('sqlite:'.length), { readonly: true });
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
      const m = await measure(
        [
          { name: `${label} off`, url: `${off.origin}${PATH}`, headers, server: off },
          { name: `${label} on`, url: `${on.origin}${PATH}`, headers, server: on },
        ],
        plan,
      );
      const offM = m.get(`${label} off`) as NonNullable<ReturnType<typeof m.get>>;
      const onM = m.get(`${label} on`) as NonNullable<ReturnType<typeof m.get>>;
      for (const server of servers.splice(0)) await server.stop();
      const recorded = await requestRows(data);
      rows.push([
        label,
        fmtInt(offM.median),
        fmtInt(onM.median),
        fmtRatio(ratio(onM, offM)),
        fmtInt(offM.cpuUsPerRequest),
        fmtInt(onM.cpuUsPerRequest),
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
    `\`GET ${PATH}\` (page cache), recording on against off in the same run. Goal: on / off >= 0.95.`,
    '',
    table(
      ['backend', 'off req/s', 'on req/s', 'on / off', 'off CPU µs/req', 'on CPU µs/req', 'log rows written'],
      ['l', 'r', 'r', 'r', 'r', 'r', 'r'],
      rows,
    ),
    '',
  ].join('\n');
}
