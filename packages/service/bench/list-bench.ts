import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CursorCodec, encodeListCursor, loadCursorSecret } from '../src/http/cursor.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { ApiServerConfig } from './api-server.js';
import { summariseProfiles } from './cpu-profile.js';
import {
  fmtInt,
  fmtRatio,
  type LoadPlan,
  load,
  measure,
  ratio,
  type ServerProcess,
  startServerProcess,
  table,
} from './harness.js';
import { BENCH_TEAM, CACHE_DIR, type LeadData, sqliteLeads } from './lead-data.js';

// Issue 2: GET /v1/leads?limit=100 with a real key and real access control (memory limiter, limits
// raised) against a bare node:http server writing the same bytes from memory; a deep page against
// the first; peak server RSS at a small and a large number of leads.

export interface ListBenchOptions {
  plan: LoadPlan;
  /** Leads of the small and the large data set (the large one also gives the deep page). */
  small: number;
  large: number;
  /** When set, a CPU profile of the API under the first-page load is written here and summarised. */
  profileDir?: string;
}

const PAGE = 100;
/** Targets of issue 2 (memory "flat": at most 25% more peak RSS on the large set than on the small one). */
export const LIST_TARGETS = { apiOverBare: 0.4, deepOverFirst: 1.2, rssLargeOverSmall: 1.25 } as const;

export async function startApi(config: ApiServerConfig): Promise<ServerProcess> {
  return startServerProcess('./api-server.ts', [JSON.stringify(config)]);
}

/** Profiles the API while `url` is loaded; a summary of where its CPU time went. */
async function profileApi(
  api: ServerProcess,
  url: string,
  headers: Record<string, string>,
  plan: LoadPlan,
  dir: string,
): Promise<string> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  await api.profileStart();
  await load(url, headers, plan.seconds, plan.connections);
  await api.profileStop(join(dir, 'api-leads-first-page.cpuprofile'));
  return [`CPU profile of the API under the first-page load (${dir}):`, '', summariseProfiles(dir)].join('\n');
}

/**
 * A cursor `depth` records into the list, signed as the server signs it. The page it opens is the one
 * before last, so like the first page it reads `limit + 1` rows and issues a next cursor.
 */
async function deepCursor(data: LeadData): Promise<{ cursor: string; depth: number }> {
  const store = new SqliteStore({ path: data.url.slice('sqlite:'.length) });
  await store.migrate();
  try {
    const codec = new CursorCodec();
    codec.setSecret(await loadCursorSecret(store));
    const depth = Math.max(0, data.leads - 2 * PAGE);
    let after = 0;
    for (let skipped = 0; skipped < depth; ) {
      const rows = await store.listRecords({
        team: BENCH_TEAM,
        kind: 'lead',
        after,
        limit: Math.min(10_000, depth - skipped),
      });
      const last = rows[rows.length - 1];
      if (!last) break;
      skipped += rows.length;
      after = last.seq;
    }
    const cursor = encodeListCursor(
      codec,
      { endpoint: 'leads.list', team: BENCH_TEAM, filter: '' },
      { seq: after, id: '' },
    );
    return { cursor, depth };
  } finally {
    await store.close();
  }
}

async function fetchOk(url: string, key: string): Promise<Buffer> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) throw new Error(`GET ${url}: HTTP ${response.status} ${bytes.toString('utf8')}`);
  return bytes;
}

/** Peak RSS of a fresh API process after the same load: first page, then the last page. */
async function peakRss(data: LeadData, plan: LoadPlan): Promise<number> {
  const { cursor } = await deepCursor(data);
  const server = await startApi({ url: data.url, access: 'memory' });
  try {
    const headers = { authorization: `Bearer ${data.key}` };
    for (const query of [`limit=${PAGE}`, `limit=${PAGE}&cursor=${cursor}`]) {
      const result = await load(`${server.origin}/v1/leads?${query}`, headers, plan.seconds, plan.connections);
      if (result.non2xx > 0 || result.errors > 0) throw new Error('memory run: requests refused');
    }
    return await server.maxRssKb();
  } finally {
    await server.stop();
  }
}

export async function listBench(options: ListBenchOptions): Promise<string> {
  const { plan } = options;
  const small = await sqliteLeads(options.small);
  const large = await sqliteLeads(options.large);
  const deep = await deepCursor(large);
  const api = await startApi({ url: large.url, access: 'memory' });
  // The same API with the page cache off: every request reads its 101 rows from the store.
  const uncached = await startApi({ url: large.url, access: 'memory', pageCache: false });
  const servers: ServerProcess[] = [api, uncached];
  try {
    const first = `${api.origin}/v1/leads?limit=${PAGE}`;
    const deepUrl = `${first}&cursor=${deep.cursor}`;
    const page = await fetchOk(first, large.key);
    const deepPage = JSON.parse((await fetchOk(deepUrl, large.key)).toString('utf8')) as { data: unknown[] };
    if (deepPage.data.length !== PAGE) throw new Error(`deep page holds ${deepPage.data.length} leads, not ${PAGE}`);
    const bodyFile = `${CACHE_DIR}leads-page.json`;
    writeFileSync(bodyFile, page);
    const bare = await startServerProcess('./bare-server.ts', [bodyFile]);
    servers.push(bare);
    const asString = await startServerProcess('./bare-server.ts', [bodyFile, 'string']);
    servers.push(asString);
    const stringify = await startServerProcess('./bare-server.ts', [bodyFile, 'stringify']);
    servers.push(stringify);
    const headers = { authorization: `Bearer ${large.key}` };
    process.stderr.write(`list: ${fmtInt(large.leads)} leads, page of ${page.length} bytes\n`);
    const m = await measure(
      [
        { name: 'bare', url: `${bare.origin}/v1/leads`, server: bare },
        { name: 'string', url: `${asString.origin}/v1/leads`, server: asString },
        { name: 'stringify', url: `${stringify.origin}/v1/leads`, server: stringify },
        { name: 'first', url: first, headers, server: api },
        { name: 'deep', url: deepUrl, headers, server: api },
        { name: 'first-uncached', url: first.replace(api.origin, uncached.origin), headers, server: uncached },
        { name: 'deep-uncached', url: deepUrl.replace(api.origin, uncached.origin), headers, server: uncached },
      ],
      plan,
    );
    const get = (name: string) => m.get(name) as NonNullable<ReturnType<typeof m.get>>;
    const apiRatio = ratio(get('first'), get('bare'));
    const uncachedRatio = ratio(get('first-uncached'), get('bare'));
    // A deep page against the first with the cache off, so both really read their rows.
    const deepCost = 1 / ratio(get('deep-uncached'), get('first-uncached'));
    const profile = options.profileDir ? await profileApi(api, first, headers, plan, options.profileDir) : '';
    for (const server of servers.splice(0)) await server.stop();

    process.stderr.write('list: peak RSS\n');
    const rssSmall = await peakRss(small, plan);
    const rssLarge = await peakRss(large, plan);

    const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
    return [
      `### Issue 2: GET /v1/leads?limit=100 (SQLite, ${fmtInt(large.leads)} leads, ${plan.connections} connections, ${plan.rounds} x ${plan.seconds} s)`,
      '',
      table(
        ['server', 'req/s (median)', 'p99 ms', 'req/s ratio', 'server CPU µs/req', 'CPU/req ratio'],
        ['l', 'r', 'r', 'r', 'r', 'r'],
        [
          ['bare node:http, same bytes from memory (baseline)', 'bare'],
          ['bare node:http, same body as a JS string', 'string'],
          ['bare node:http, JSON.stringify per request', 'stringify'],
          ['API, first page (real key, memory limiter, page cache)', 'first'],
          [`API, page ${fmtInt(deep.depth)} records deep (page cache)`, 'deep'],
          ['API, first page, page cache off', 'first-uncached'],
          [`API, page ${fmtInt(deep.depth)} records deep, page cache off`, 'deep-uncached'],
        ].map(([label, name]) => {
          const r = get(name as string);
          const b = get('bare');
          return [
            label as string,
            fmtInt(r.median),
            String(r.p99Ms),
            fmtRatio(ratio(r, b)),
            fmtInt(r.cpuUsPerRequest),
            fmtRatio(r.cpuUsPerRequest / b.cpuUsPerRequest),
          ];
        }),
      ),
      '',
      table(
        ['check', 'measured', 'target', 'result'],
        ['l', 'r', 'r', 'l'],
        [
          [
            'API / bare (req/s), a page read again (page cache)',
            fmtRatio(apiRatio),
            `>= ${LIST_TARGETS.apiOverBare}`,
            met(apiRatio >= LIST_TARGETS.apiOverBare),
          ],
          [
            'API / bare (req/s), page cache off (every request reads its rows)',
            fmtRatio(uncachedRatio),
            `>= ${LIST_TARGETS.apiOverBare}`,
            met(uncachedRatio >= LIST_TARGETS.apiOverBare),
          ],
          [
            'deep page cost / first page cost (page cache off)',
            fmtRatio(deepCost),
            `<= ${LIST_TARGETS.deepOverFirst}`,
            met(deepCost <= LIST_TARGETS.deepOverFirst),
          ],
          [
            `peak RSS ${fmtInt(large.leads)} / ${fmtInt(small.leads)} leads`,
            `${fmtRatio(rssLarge / rssSmall)} (${fmtInt(rssLarge / 1024)} / ${fmtInt(rssSmall / 1024)} MB)`,
            `flat (<= ${LIST_TARGETS.rssLargeOverSmall})`,
            met(rssLarge / rssSmall <= LIST_TARGETS.rssLargeOverSmall),
          ],
          [
            `generating ${fmtInt(large.leads)} leads (write side, SQLite)`,
            `${fmtInt(large.leadsPerSecond)} leads/s (${fmtInt(large.generatedSeconds)} s)`,
            '',
            '',
          ],
        ],
      ),
      '',
      profile,
    ].join('\n');
  } finally {
    for (const server of servers) await server.stop();
  }
}
