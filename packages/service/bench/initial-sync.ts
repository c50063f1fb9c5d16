import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { Limits } from '../src/config.js';
import type { CrmEvent } from '../src/write/events.js';
import { Crm, createIntegration, DEFAULT_LIMITS, SqliteStore, startServer, systemClock } from './service.js';

// Initial-sync throughput: items per second a consumer gets through HTTP (GET /v1/sync/changes at
// limit=100, following next_cursor until has_more is false, hold-back 0) as a ratio of reading the
// same rows straight from the database in one process (store.readFeed in pages of 100), same run.
// A third figure is the floor of any HTTP service here: a bare node:http server replaying, from memory, the
// exact bytes the API sent for each page, walked by the same client code (fetch, then the page's JSON parsed
// as a consumer would). Sizes are feed items (arguments; default 10,000 and 1,000,000). Databases are generated once, as
// client leads (three items each: lead and its two facets) through Crm.applyBatch, and cached under
// packages/service/.bench/ so reruns reuse them.
//
//   node --import tsx bench/initial-sync.ts [items ...]

const TEAM = 'team_Bench';
const LEADS_PER_BATCH = 2_000;
const AT = '2026-01-10T10:00:00.000Z';
/** Pages read before timing, so both sides run warm (JIT, page cache). */
const WARM_UP_PAGES = 30;
const CACHE = fileURLToPath(new URL('../.bench/', import.meta.url));

interface Dataset {
  path: string;
  key: string;
  items: number;
}

async function dataset(items: number): Promise<Dataset> {
  const path = `${CACHE}initial-sync-${items}.db`;
  const info = `${CACHE}initial-sync-${items}.json`;
  if (existsSync(path) && existsSync(info))
    return { path, items, ...(JSON.parse(readFileSync(info, 'utf8')) as { key: string }) };
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
  return { path, key, items };
}

async function direct(path: string): Promise<{ items: number; ms: number }> {
  const store = new SqliteStore({ path });
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

/** The same walk against a bare server that answers each query with the bytes the API answered it with. */
async function bare(pages: Map<string, Buffer>): Promise<Walk> {
  const server = createServer((request, response) => {
    const body = pages.get((request.url ?? '').replace('/v1/sync/changes?', ''));
    response.writeHead(body ? 200 : 404, { 'content-type': 'application/json; charset=utf-8' });
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    return await walk(origin, {});
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

async function http(path: string, key: string, pages: Map<string, Buffer>): Promise<Walk> {
  const store = new SqliteStore({ path });
  await store.migrate();
  // No hold-back, and rate limit and quota out of the way: this measures the feed, not the limits.
  const limits: Limits = { ...DEFAULT_LIMITS, feedHoldBackMs: 0, itemsPerMinute: 1e12, dailyItemQuota: 1e12 };
  const server = await startServer({
    store,
    host: '127.0.0.1',
    port: 0,
    limits,
    logger: pino({ level: 'silent' }),
    handleSignals: false,
  });
  const headers = { authorization: `Bearer ${key}` };
  for (let i = 0, cursor = ''; i < WARM_UP_PAGES; i++) {
    const response = await fetch(`${server.origin}/v1/sync/changes?limit=100${cursor}`, { headers });
    cursor = `&cursor=${((await response.json()) as { next_cursor: string }).next_cursor}`;
  }
  try {
    return await walk(server.origin, headers, (query, body) => pages.set(query, body));
  } finally {
    await server.close();
  }
}

const sizes = process.argv.slice(2).map(Number);
const rows: string[] = [];
for (const size of sizes.length ? sizes : [10_000, 1_000_000]) {
  if (!Number.isSafeInteger(size) || size < 1) throw new Error(`not a size: ${size}`);
  const data = await dataset(size);
  const db = await direct(data.path);
  const pages = new Map<string, Buffer>();
  const api = await http(data.path, data.key, pages);
  if (api.items !== db.items) throw new Error(`HTTP delivered ${api.items} items, the database holds ${db.items}`);
  const floor = await bare(pages);
  if (floor.items !== db.items) throw new Error(`the bare server delivered ${floor.items} items, not ${db.items}`);
  const perSecond = (r: { items: number; ms: number }) => r.items / (r.ms / 1000);
  // A consumer asks for a page once it has the one before (the cursor is in it), so an API can do no
  // better than reading the rows and then sending the bytes: the database walk plus the bare walk.
  const readThenSend = { items: db.items, ms: db.ms + floor.ms };
  rows.push(
    `| ${size.toLocaleString('en')} | ${db.items.toLocaleString('en')} | ${Math.round(perSecond(db)).toLocaleString('en')} | ${Math.round(perSecond(api)).toLocaleString('en')} | ${(perSecond(api) / perSecond(db)).toFixed(3)} | ${Math.round(perSecond(floor)).toLocaleString('en')} | ${(perSecond(floor) / perSecond(db)).toFixed(3)} | ${(perSecond(api) / perSecond(floor)).toFixed(3)} | ${(perSecond(readThenSend) / perSecond(db)).toFixed(3)} | ${(api.ms / api.requests).toFixed(2)} / ${(floor.ms / floor.requests).toFixed(2)} / ${((db.ms / db.items) * 100).toFixed(2)} |`,
  );
}
process.stdout.write(
  [
    '### Initial sync (SQLite, one consumer, limit=100, hold-back 0)',
    '',
    '| records | feed items | database items/s | HTTP items/s | HTTP / database | bare server items/s | bare / database | HTTP / bare | read then send / database | ms per page: API / bare / database |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
  ].join('\n'),
);
