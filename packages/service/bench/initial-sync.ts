import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Store } from '../src/store/store.js';
import type { CrmEvent } from '../src/write/events/events.js';
import type { ApiServerConfig } from './api-server.js';
import { type ServerProcess, startServerProcess } from './harness.js';
import { postgresLeads } from './lead-data.js';
import { Crm, createIntegration, PostgresStore, SqliteStore, systemClock } from './service.js';

// Initial-sync throughput: items per second a consumer gets through HTTP (GET /v1/sync/changes at
// limit=100, following next_cursor until has_more is false, hold-back 0) as a ratio of reading the
// same rows straight from the database in one process (store.readFeed in pages of 100), same run. The API
// (bench/api-server.ts) and the bare server each run in a process of their own, as a consumer meets a
// service; the walking client is this process. A third figure is the floor of any HTTP service here: a bare node:http server replaying, from memory, the
// exact bytes the API sent for each page, walked by the same client code (fetch, then the page's JSON parsed
// as a consumer would). Sizes are feed items (arguments; default 10,000 and 1,000,000). Databases are generated once, as
// client leads (three items each: lead and its two facets) through Crm.applyBatch, and cached under
// packages/service/.bench/ so reruns reuse them.
//
// `pg:N` walks the PostgreSQL schema of N leads that the list benchmarks build (lead-data.ts) instead.
//
//   node --import tsx bench/initial-sync.ts [--rounds N] [items | pg:leads ...]

const TEAM = 'team_Bench';
const LEADS_PER_BATCH = 2_000;
const AT = '2026-01-10T10:00:00.000Z';
/** Pages read before timing, so both sides run warm (JIT, page cache). */
const WARM_UP_PAGES = 30;
const CACHE = fileURLToPath(new URL('../.bench/', import.meta.url));

/** A database to walk: its URL as the API server takes it, and a key that reads the bench team. */
interface Dataset {
  label: string;
  url: string;
  schema?: string;
  key: string;
  /** The store the database walk reads. */
  open(): Store;
}

async function dataset(items: number): Promise<Dataset> {
  const path = `${CACHE}initial-sync-${items}.db`;
  const info = `${CACHE}initial-sync-${items}.json`;
  const made = (key: string): Dataset => ({
    label: `SQLite, ${items.toLocaleString('en')} records`,
    url: `sqlite:${path}`,
    key,
    open: () => new SqliteStore({ path }),
  });
  if (existsSync(path) && existsSync(info))
    return made((JSON.parse(readFileSync(info, 'utf8')) as { key: string }).key);
  mkdirSync(CACHE, { recursive: true });
  const building = `${path}.building`;
  for (const suffix of ['', '-wal', '-shm']) rmSync(building + suffix, { force: true });
  const store = new SqliteStore({ path: building });
  await store.migrate();
  const crm = new Crm(store, systemClock);
  await crm.applyBatch([
    { type: 'organization.upsert', at: AT, organization: 'orgBench', name: 'Bench', plan: 'api_included' },
    { type: 'team.upsert', at: AT, team: TEAM, organization: 'orgBench', name: 'Bench', captured_at: AT },
  ]);
  const leads = Math.ceil(items / 3);
  const started = Date.now();
  for (let done = 0; done < leads; done += LEADS_PER_BATCH) {
    const batch: CrmEvent[] = [];
    for (let i = done; i < Math.min(leads, done + LEADS_PER_BATCH); i++) {
      batch.push({
        type: 'lead.created',
        at: AT,
        team: TEAM,
        lead: `lead_b${i}`,
        status: null,
        name: 'Ada',
        surname: `Lovelace${i}`,
        email: `ada${i}@example.com`,
        phone: '+493012345678',
        tags: ['lead'],
      });
    }
    await crm.applyBatch(batch);
    process.stderr.write(`\rgenerating ${items} items: ${Math.min(leads, done + LEADS_PER_BATCH)}/${leads} leads`);
  }
  process.stderr.write(` (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
  const { key } = await createIntegration(store, systemClock, { teams: [TEAM], name: 'initial-sync bench' });
  await store.close();
  renameSync(building, path);
  writeFileSync(info, JSON.stringify({ key }));
  return made(key);
}

/** The list benchmarks' PostgreSQL schema of `leads` leads (lead-data.ts): each lead, its facets, its activity. */
async function postgresDataset(leads: number): Promise<Dataset> {
  const data = await postgresLeads(leads);
  const schema = data.schema as string;
  return {
    label: `PostgreSQL, ${leads.toLocaleString('en')} leads`,
    url: data.url,
    schema,
    key: data.key,
    open: () => new PostgresStore({ url: data.url, schema }),
  };
}

async function direct(data: Dataset): Promise<{ items: number; ms: number }> {
  const store = data.open();
  await store.migrate();
  for (let i = 0, after = 0; i < WARM_UP_PAGES; i++)
    after = (await store.readFeed(TEAM, after, 100)).at(-1)?.pos ?? after;
  const started = performance.now();
  let items = 0;
  for (let after = 0; ; ) {
    const rows = await store.readFeed(TEAM, after, 100);
    const last = rows[rows.length - 1];
    if (!last) break;
    items += rows.length;
    after = last.pos;
  }
  const ms = performance.now() - started;
  await store.close();
  return { items, ms };
}

interface Walk {
  items: number;
  ms: number;
  requests: number;
}

/**
 * Follows the feed from `origin` as a consumer does (fetch a page, parse it, take its next_cursor) until
 * has_more is false; `record` sees each page's raw bytes and the query that fetched it.
 */
async function walk(
  origin: string,
  headers: Record<string, string>,
  record?: (query: string, body: Buffer) => void,
): Promise<Walk> {
  const started = performance.now();
  let items = 0;
  let requests = 0;
  for (let cursor: string | undefined; ; ) {
    const query = cursor === undefined ? 'limit=100' : `limit=100&cursor=${cursor}`;
    const response = await fetch(`${origin}/v1/sync/changes?${query}`, { headers });
    if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    const bytes = Buffer.from(await response.arrayBuffer());
    record?.(query, bytes);
    const page = JSON.parse(bytes.toString('utf8')) as { data: unknown[]; has_more: boolean; next_cursor: string };
    requests++;
    items += page.data.length;
    cursor = page.next_cursor;
    if (!page.has_more) break;
  }
  return { items, ms: performance.now() - started, requests };
}

/** CPU time the server process spent on a walk, microseconds, beside the walk itself. */
async function measured(server: ServerProcess, run: () => Promise<Walk>): Promise<Walk & { cpuUs: number }> {
  const before = await server.cpuUs();
  const result = await run();
  return { ...result, cpuUs: (await server.cpuUs()) - before };
}

/** The same walk against a bare server (its own process) answering each query with the bytes the API answered. */
async function bare(pages: Map<string, Buffer>): Promise<Walk & { cpuUs: number }> {
  const file = `${CACHE}initial-sync-bodies.ndjson`;
  const out = createWriteStream(file);
  for (const [query, body] of pages) {
    const line = `${JSON.stringify([`/v1/sync/changes?${query}`, body.toString('base64')])}\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
  const server = await startServerProcess('./bare-server.ts', [file]);
  try {
    return await measured(server, () => walk(server.origin, {}));
  } finally {
    await server.stop();
    rmSync(file, { force: true });
  }
}

/**
 * The API in a process of its own, as a consumer meets it (the client never shares the server's thread),
 * with the real key check and limiter; rate limit and quota out of the way, no hold-back: this measures
 * the feed, not the limits.
 */
async function http(data: Dataset, pages: Map<string, Buffer>, readAhead = true): Promise<Walk & { cpuUs: number }> {
  const config: ApiServerConfig = {
    url: data.url,
    ...(data.schema ? { schema: data.schema } : {}),
    access: 'memory',
    feedHoldBackMs: 0,
    ...(readAhead ? {} : { feedReadAhead: false }),
  };
  const server = await startServerProcess('./api-server.ts', [JSON.stringify(config)]);
  const headers = { authorization: `Bearer ${data.key}` };
  try {
    for (let i = 0, cursor = ''; i < WARM_UP_PAGES; i++) {
      const response = await fetch(`${server.origin}/v1/sync/changes?limit=100${cursor}`, { headers });
      cursor = `&cursor=${((await response.json()) as { next_cursor: string }).next_cursor}`;
    }
    return await measured(server, () => walk(server.origin, headers, (query, body) => pages.set(query, body)));
  } finally {
    await server.stop();
  }
}

const { values: options, positionals: sizes } = parseArgs({
  options: { rounds: { type: 'string' } },
  allowPositionals: true,
});
/** `--rounds N` for every size (run.ts's --quick asks for 2); otherwise 5 for small feeds, 1 for large ones. */
const roundsAsked = options.rounds === undefined ? undefined : Number(options.rounds);
if (roundsAsked !== undefined && !(Number.isSafeInteger(roundsAsked) && roundsAsked >= 1)) {
  throw new Error(`not a number of rounds: ${options.rounds}`);
}
const rows: string[] = [];
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
for (const spec of sizes.length ? sizes : ['10000', '1000000']) {
  // `N`: a SQLite feed of N items; `pg:N`: the PostgreSQL schema of N leads the other benchmarks use.
  const size = Number(spec.replace(/^pg:/, ''));
  if (!Number.isSafeInteger(size) || size < 1) throw new Error(`not a size: ${spec}`);
  let data: Dataset;
  try {
    data = spec.startsWith('pg:') ? await postgresDataset(size) : await dataset(size);
  } catch (error) {
    // PostgreSQL down or unreachable: its row says so, and the SQLite walks keep their figures.
    if (!spec.startsWith('pg:')) throw error;
    rows.push(`| PostgreSQL, ${size.toLocaleString('en')} leads | skipped: ${(error as Error).message} |`);
    continue;
  }
  // Small feeds walk in well under a second, so they get several interleaved rounds (medians); large ones one.
  const rounds = roundsAsked ?? (size <= 100_000 ? 5 : 1);
  const db: number[] = [];
  const api: number[] = [];
  const asked: number[] = [];
  const floor: number[] = [];
  const cpu = { api: [] as number[], asked: [] as number[], floor: [] as number[] };
  let items = 0;
  let requests = 0;
  for (let round = 0; round < rounds; round++) {
    const read = await direct(data);
    items = read.items;
    const pages = new Map<string, Buffer>();
    const served = await http(data, pages);
    if (served.items !== items) throw new Error(`HTTP delivered ${served.items} items, the database holds ${items}`);
    // The same API reading each page only when it is asked for: what read-ahead adds.
    const unread = await http(data, new Map(), false);
    if (unread.items !== items) throw new Error(`HTTP delivered ${unread.items} items, the database holds ${items}`);
    const replayed = await bare(pages);
    if (replayed.items !== items) throw new Error(`the bare server delivered ${replayed.items} items, not ${items}`);
    requests = served.requests;
    db.push(read.ms);
    api.push(served.ms);
    asked.push(unread.ms);
    floor.push(replayed.ms);
    cpu.api.push(served.cpuUs / served.requests);
    cpu.asked.push(unread.cpuUs / unread.requests);
    cpu.floor.push(replayed.cpuUs / replayed.requests);
  }
  const perSecond = (ms: number) => items / (ms / 1000);
  const ratio = (a: number[], b: number[]) => median(a.map((ms, i) => (b[i] as number) / ms));
  // Reading a page and then sending it, nothing overlapping: the database walk plus the bare walk. A
  // consumer asks for a page only once it has the one before (the cursor is in it), so an API that reads
  // only when asked cannot beat it; the feed's read-ahead (docs/feed.md) reads the next page while the
  // consumer parses this one.
  const readThenSend = db.map((ms, i) => ms + (floor[i] as number));
  const fmt = (n: number) => Math.round(n).toLocaleString('en');
  rows.push(
    `| ${data.label} | ${items.toLocaleString('en')} | ${fmt(perSecond(median(db)))} | ${fmt(perSecond(median(api)))} | ${ratio(api, db).toFixed(3)} | ${ratio(asked, db).toFixed(3)} | ${fmt(perSecond(median(floor)))} | ${ratio(floor, db).toFixed(3)} | ${ratio(api, floor).toFixed(3)} | ${ratio(readThenSend, db).toFixed(3)} | ${(median(api) / requests).toFixed(2)} / ${(median(asked) / requests).toFixed(2)} / ${(median(floor) / requests).toFixed(2)} / ${((median(db) / items) * 100).toFixed(2)} | ${fmt(median(cpu.api))} / ${fmt(median(cpu.asked))} / ${fmt(median(cpu.floor))} |`,
  );
}
process.stdout.write(
  [
    '### Initial sync (one consumer, limit=100, hold-back 0; servers in processes of their own)',
    '',
    '| database | feed items | database items/s | HTTP items/s | HTTP / database | without read-ahead / database | bare server items/s | bare / database | HTTP / bare | read then send / database | ms per page: API / without read-ahead / bare / database | server CPU µs per page: API / without read-ahead / bare |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
  ].join('\n'),
);
