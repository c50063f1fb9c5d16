import { once } from 'node:events';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { Store, WriteSet, WriteTx } from '../src/store/store.js';
import type { CrmEvent } from '../src/write/events/events.js';
import { fmtInt, fmtRatio } from './harness.js';
import { CACHE_DIR, pgBenchUrl } from './lead-data.js';
import {
  compactUnreadFeeds,
  demoEvents,
  EVENT_TYPES,
  ingestFile,
  PostgresStore,
  runDemo,
  SqliteStore,
  systemClock,
} from './service.js';

// The write side's throughput and footprint: `crm-export ingest` of one NDJSON file holding every event
// type in the demo's realistic mix, into a fresh SQLite file and a fresh PostgreSQL schema in the same
// run; demo generation on both; and the bytes a demo lead takes on disk. PostgreSQL statements are
// counted by wrapping pg's `Client.query` in this process (each call is one round trip).

export interface WriteBenchOptions {
  /** Leads of the ingest file (two teams, half each). */
  ingestLeads: number;
  /** Leads of the demo run (one team). */
  demoLeads: number;
}

const SEED = 20_261_124;
const NOW = Date.parse('2026-11-01T00:00:00.000Z');

let statements = 0;
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
  statements += 1;
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;

/**
 * Events the demo's stories never produce (edits and removals of single calls, conversations and
 * bookings, permission changes), added after some leads' stories about that lead's own records, so the
 * file holds every event type in about the share a real CRM would send them.
 */
function extras(events: readonly CrmEvent[], index: number): CrmEvent[] {
  const ids = (type: CrmEvent['type'], field: string) =>
    events.filter((e) => e.type === type).map((e) => (e as unknown as Record<string, string>)[field] as string);
  const last = Math.max(...events.map((e) => Date.parse(e.at)));
  const at = new Date(Math.min(last + 60_000, NOW)).toISOString();
  const [lead] = ids('lead.created', 'lead');
  const [call, otherCall] = ids('call.recorded', 'call');
  const [conversation] = ids('conversation.started', 'conversation');
  const [booking] = ids('booking.created', 'booking');
  // A lead removed in its story takes its calls, conversations and bookings with it.
  if (events.some((e) => e.type === 'lead.erased' || e.type === 'lead.deleted')) return [];
  const out: CrmEvent[] = [];
  if (lead && index % 5 === 0) {
    out.push({ type: 'lead.contact_permissions', at, lead, email_opt_out: true, whatsapp_consent: false });
  }
  if (call && index % 4 === 0) out.push({ type: 'call.updated', at, call, duration_seconds: 60 + (index % 300) });
  if (otherCall && index % 13 === 1) out.push({ type: 'call.erased', at, call: otherCall });
  if (call && index % 17 === 2) out.push({ type: 'call.deleted', at, call });
  if (conversation && index % 19 === 3) out.push({ type: 'conversation.erased', at, conversation });
  else if (conversation && index % 23 === 4) out.push({ type: 'conversation.deleted', at, conversation });
  if (booking && index % 11 === 5) out.push({ type: 'booking.deleted', at, booking });
  return out;
}

/** The ingest file of `leads` leads, written once under .bench/ and reused; returns its path and event count. */
async function ingestData(leads: number): Promise<{ path: string; events: number }> {
  const path = `${CACHE_DIR}ingest-${leads}.ndjson`;
  const countPath = `${path}.events`;
  if (existsSync(path) && existsSync(countPath)) return { path, events: Number(readFileSync(countPath, 'utf8')) };
  mkdirSync(CACHE_DIR, { recursive: true });
  const building = `${path}.building`;
  const out = createWriteStream(building);
  const seen = new Set<string>();
  let events = 0;
  let index = 0;
  for (const chunk of demoEvents({ seed: SEED, teams: 2, leads: Math.ceil(leads / 2), now: NOW })) {
    for (const event of [...chunk.events, ...extras(chunk.events, index)]) {
      seen.add(event.type);
      events += 1;
      if (!out.write(`${JSON.stringify(event)}\n`)) await once(out, 'drain');
    }
    index += 1;
  }
  out.end();
  await once(out, 'finish');
  const missing = EVENT_TYPES.filter((type) => !seen.has(type));
  if (missing.length > 0) throw new Error(`the ingest file lacks event types: ${missing.join(', ')}`);
  renameSync(building, path);
  writeFileSync(countPath, String(events));
  return { path, events };
}

/** A fresh SQLite file under .bench/ (removed first). */
function freshSqlite(name: string): InstanceType<typeof SqliteStore> {
  const path = `${CACHE_DIR}${name}.db`;
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
  return new SqliteStore({ path });
}

const fileBytes = (path: string) => (existsSync(path) ? statSync(path).size : 0);

/** A fresh schema in the bench database (dropped first); `drop` removes it after the run. */
async function freshPostgres(
  schema: string,
): Promise<{ store: InstanceType<typeof PostgresStore>; url: string; drop(): Promise<void> }> {
  const url = await pgBenchUrl();
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  const store = new PostgresStore({ url, schema });
  return { store, url, drop: async () => void (await run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)) };
}

/** The exported JSON: the bytes of every live record's JSON, each record once (what a full list export sends). */
const exportedJson = (records: string) =>
  `SELECT coalesce(sum(octet_length(json)), 0) AS bytes FROM ${records} WHERE removed IS NULL`;

/** Bytes per table (indexes and TOAST included) of a PostgreSQL schema, and its exported JSON (`exportedJson`). */
async function postgresTableBytes(url: string, schema: string): Promise<{ tables: Map<string, number>; json: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query<{ name: string; bytes: string }>(
      `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [schema],
    );
    const json = await client.query<{ bytes: string }>(exportedJson(`${schema}.records`));
    return { tables: new Map(result.rows.map((r) => [r.name, Number(r.bytes)])), json: Number(json.rows[0]?.bytes) };
  } finally {
    await client.end();
  }
}

/**
 * Bytes per table (indexes included) of a SQLite file, from its pages (the dbstat table), when available, and
 * its exported JSON (`exportedJson`; SQLite's octet_length counts a text's UTF-8 bytes too).
 */
function sqliteTableBytes(path: string): { tables: Map<string, number>; json: number } {
  const out = new Map<string, number>();
  // A throw-away read-only handle: the bench process ends soon after, so it is simply kept.
  const store = new SqliteStore({ path, mustExist: true });
  const db = (store as unknown as { writer: { db: import('better-sqlite3').Database } }).writer.db;
  const json = (db.prepare(exportedJson('records')).get() as { bytes: number }).bytes;
  try {
    const rows = db
      .prepare(
        `SELECT coalesce(m.tbl_name, s.name) AS name, sum(s.pgsize) AS bytes FROM dbstat s
         LEFT JOIN sqlite_master m ON m.name = s.name GROUP BY 1`,
      )
      .all() as { name: string; bytes: number }[];
    for (const row of rows) out.set(row.name, row.bytes);
  } catch {
    // Built without the dbstat table: only the file sizes are reported.
  }
  return { tables: out, json };
}

interface Timed {
  seconds: number;
  /** CPU seconds of this process (the database server's not included): steadier than time on a shared machine. */
  cpu: number;
  statements: number;
}

async function timed(work: () => Promise<void>): Promise<Timed> {
  const before = statements;
  const started = performance.now();
  const cpu = process.cpuUsage();
  await work();
  const used = process.cpuUsage(cpu);
  return {
    seconds: (performance.now() - started) / 1000,
    cpu: (used.user + used.system) / 1e6,
    statements: statements - before,
  };
}

/**
 * Records what each write transaction of `store` hands to the database (`WriteTx.applyWrites`), one list per
 * transaction that hands anything. Holding references costs the demo nothing measurable; the sets are not
 * changed after they are applied (each transaction's write cache is thrown away at its end).
 */
function recordWriteSets(store: Store): WriteSet[][] {
  const transactions: WriteSet[][] = [];
  const write = store.write.bind(store);
  store.write = <T>(fn: (tx: WriteTx) => Promise<T>) =>
    write((tx) => {
      const sets: WriteSet[] = [];
      const recorded = new Proxy(tx, {
        get(target, name) {
          if (name === 'applyWrites') {
            return (w: WriteSet) => {
              if (sets.length === 0) transactions.push(sets);
              sets.push(w);
              return target.applyWrites(w);
            };
          }
          const value = Reflect.get(target, name);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      return fn(recorded);
    });
  return transactions;
}

/**
 * The database's share of a demo: the rows its transactions wrote, replayed into a fresh store with no write
 * side (no events, projections or JSON made), each transaction followed by the feed compaction the demo runs
 * after each batch, and the demo's closing space reclaim. What the demo could reach if its own work cost nothing.
 */
async function replayWrites(store: Store, transactions: readonly WriteSet[][], teams: string[]): Promise<void> {
  const compacted = new Map<string, number>();
  for (const sets of transactions) {
    await store.write(async (tx) => {
      for (const w of sets) {
        // PostgreSQL appends only under a team's locked head, as the write side takes it (once per team).
        for (const team of new Set(w.appendFeed.map((e) => e.team))) await tx.lockFeedHead(team);
        await tx.applyWrites(w);
      }
    });
    await compactUnreadFeeds(store, teams, compacted);
  }
  await store.reclaimSpace?.();
}

async function ingestInto(store: Store, path: string): Promise<Timed> {
  await store.migrate();
  return timed(async () => {
    const result = await ingestFile(path, { store, clock: systemClock });
    if (result.outcome !== 'applied') throw new Error(`ingest failed: ${JSON.stringify(result)}`);
  });
}

export async function writeBench(options: WriteBenchOptions): Promise<string> {
  const lines: string[] = [];
  const data = await ingestData(options.ingestLeads);

  // Ingest.
  const lite = freshSqlite('ingest-sqlite');
  const liteRun = await ingestInto(lite, data.path);
  await lite.close();
  const pgIngest = await freshPostgres('bench_ingest');
  const pgRun = await ingestInto(pgIngest.store, data.path);
  await pgIngest.store.close();
  await pgIngest.drop();
  const liteRate = data.events / liteRun.seconds;
  const pgRate = data.events / pgRun.seconds;
  lines.push(
    `### ingest: one NDJSON file, ${fmtInt(data.events)} events of every type (${fmtInt(options.ingestLeads)} demo leads in 2 teams)`,
    '',
    '| backend | seconds | events/s | CPU µs per event (this process) | PostgreSQL statements per event |',
    '| --- | ---: | ---: | ---: | ---: |',
    `| SQLite | ${liteRun.seconds.toFixed(1)} | ${fmtInt(liteRate)} | ${fmtInt((1e6 * liteRun.cpu) / data.events)} | |`,
    `| PostgreSQL | ${pgRun.seconds.toFixed(1)} | ${fmtInt(pgRate)} | ${fmtInt((1e6 * pgRun.cpu) / data.events)} | ${(pgRun.statements / data.events).toFixed(2)} |`,
    '',
    `PostgreSQL / SQLite events/s: **${fmtRatio(pgRate / liteRate)}**`,
    '',
  );

  // Demo generation and its footprint; then the same rows written by the store alone (the database's share).
  const demo = { seed: SEED, teams: 1, leads: options.demoLeads, now: NOW };
  const liteDemo = freshSqlite('demo-sqlite');
  await liteDemo.migrate();
  const liteWrites = recordWriteSets(liteDemo);
  let liteLeads = 0;
  let teams: string[] = [];
  const liteGen = await timed(async () => {
    ({ leads: liteLeads, teams } = await runDemo(liteDemo, demo));
  });
  await liteDemo.close();
  const litePath = `${CACHE_DIR}demo-sqlite.db`;
  const liteBytes = fileBytes(litePath) + fileBytes(`${litePath}-wal`);
  const { tables: liteTables, json: liteJson } = sqliteTableBytes(litePath);
  const liteFloorStore = freshSqlite('demo-sqlite-rows');
  await liteFloorStore.migrate();
  const liteFloor = await timed(() => replayWrites(liteFloorStore, liteWrites, teams));
  await liteFloorStore.close();
  const liteFloorBytes = fileBytes(`${CACHE_DIR}demo-sqlite-rows.db`);
  liteWrites.length = 0;

  const pgDemo = await freshPostgres('bench_demo');
  await pgDemo.store.migrate();
  const pgWrites = recordWriteSets(pgDemo.store);
  let pgLeads = 0;
  const pgGen = await timed(async () => {
    pgLeads = (await runDemo(pgDemo.store, demo)).leads;
  });
  await pgDemo.store.close();
  const { tables: pgTables, json: pgJson } = await postgresTableBytes(pgDemo.url, 'bench_demo');
  await pgDemo.drop();
  const pgBytes = [...pgTables.values()].reduce((a, b) => a + b, 0);
  const pgFloorStore = await freshPostgres('bench_demo_rows');
  await pgFloorStore.store.migrate();
  const pgFloor = await timed(() => replayWrites(pgFloorStore.store, pgWrites, teams));
  await pgFloorStore.store.close();
  await pgFloorStore.drop();
  pgWrites.length = 0;

  lines.push(
    `### demo generation: ${fmtInt(options.demoLeads)} leads in one team`,
    '',
    '| backend | seconds | leads/s | CPU µs per lead (this process) | PostgreSQL statements per lead | bytes on disk per lead |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    `| SQLite | ${liteGen.seconds.toFixed(1)} | ${fmtInt(liteLeads / liteGen.seconds)} | ${fmtInt((1e6 * liteGen.cpu) / liteLeads)} | | ${fmtInt(liteBytes / liteLeads)} (file and WAL) |`,
    `| PostgreSQL | ${pgGen.seconds.toFixed(1)} | ${fmtInt(pgLeads / pgGen.seconds)} | ${fmtInt((1e6 * pgGen.cpu) / pgLeads)} | ${(pgGen.statements / pgLeads).toFixed(1)} | ${fmtInt(pgBytes / pgLeads)} (tables, indexes, TOAST) |`,
    '',
    `The same rows written by the store alone (each transaction's writes replayed into a fresh database, with the demo's feed compaction and space reclaim; no write side): SQLite ${liteFloor.seconds.toFixed(1)} s, ${fmtInt(liteLeads / liteFloor.seconds)} leads/s, ${fmtInt((1e6 * liteFloor.cpu) / liteLeads)} µs CPU per lead (${fmtInt(liteFloorBytes / liteLeads)} bytes per lead); PostgreSQL ${pgFloor.seconds.toFixed(1)} s, ${fmtInt(pgLeads / pgFloor.seconds)} leads/s, ${fmtInt((1e6 * pgFloor.cpu) / pgLeads)} µs CPU per lead. The demo's time over the rows' alone, SQLite / PostgreSQL: **${fmtRatio(liteGen.seconds / liteFloor.seconds)} / ${fmtRatio(pgGen.seconds / pgFloor.seconds)}** (the write side's share is the rest).`,
    '',
    `Exported JSON (every live record's JSON once) per demo lead: SQLite ${fmtInt(liteJson / liteLeads)}, PostgreSQL ${fmtInt(pgJson / pgLeads)} bytes. Bytes on disk / exported JSON, SQLite / PostgreSQL: **${fmtRatio(liteBytes / liteJson)} / ${fmtRatio(pgBytes / pgJson)}**.`,
    '',
    'Bytes per demo lead by table (indexes included):',
    '',
    '| table | SQLite | PostgreSQL |',
    '| --- | ---: | ---: |',
  );
  const names = [...new Set([...liteTables.keys(), ...pgTables.keys()])].sort();
  for (const name of names) {
    const l = liteTables.get(name);
    const p = pgTables.get(name);
    if ((l ?? 0) < 1024 && (p ?? 0) < 16_384) continue;
    lines.push(
      `| ${name} | ${l === undefined ? '-' : fmtInt(l / liteLeads)} | ${p === undefined ? '-' : fmtInt(p / pgLeads)} |`,
    );
  }
  lines.push('');
  return lines.join('\n');
}
