import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ApiServerConfig } from './api-server.js';
import { summariseProfiles } from './cpu-profile.js';
import {
  fmtInt,
  fmtRatio,
  type LoadPlan,
  load,
  type Measured,
  measure,
  type Rss,
  ratio,
  type ServerProcess,
  startServerProcess,
  table,
  type Variant,
} from './harness.js';
import { BENCH_TEAM, CACHE_DIR, type LeadData, sqliteLeads } from './lead-data.js';
import { CursorCodec, DEFAULT_PAGE_CACHE_BYTES, encodeListCursor, loadCursorSecret, SqliteStore } from './service.js';

// The read path: GET /v1/leads?limit=100 and GET /v1/leads/{id} with a real key and real access control
// (memory limiter, limits raised) against a bare node:http server writing, from memory, the bytes the API
// sent for the same URL. Pages are read uncached (a different page each request, page cache off) and
// cached (one page again and again); a deep page against the first; the API's RSS after the whole load
// against its RSS after start.

export interface ListBenchOptions {
  plan: LoadPlan;
  /** Leads of the data set; the deep page is the one before last. */
  leads: number;
  /** When set, CPU profiles of the API under the uncached page, cached page and single-lead loads go here. */
  profileDir?: string;
  /**
   * Another checkout of this package (its `bench/` and `src/`, e.g. an earlier commit extracted with
   * `git archive`): its API runs too, interleaved with this one, so before and after come from one run.
   */
  beforeDir?: string;
  /** Node flags for every API process of this benchmark (both checkouts'), e.g. a heap cap an operator sets. */
  apiNodeFlags?: string[];
}

const PAGE = 100;
/** Distinct pages requested in turn by the uncached load (spread over the data), and distinct leads. */
const ROTATED_PAGES = 200;
const ROTATED_LEADS = 500;
/** Goals of the read path (docs/performance.md). */
export const LIST_TARGETS = {
  uncachedOverBare: 0.4,
  cachedOverBare: 0.7,
  leadOverBare: 0.45,
  deepOverFirst: 1.2,
} as const;

export async function startApi(
  config: ApiServerConfig,
  packageDir?: string,
  nodeFlags: string[] = [],
): Promise<ServerProcess> {
  const script = packageDir ? resolve(packageDir, 'bench/api-server.ts') : './api-server.ts';
  return startServerProcess(script, [JSON.stringify(config)], { nodeFlags });
}

interface Paths {
  first: string;
  /** The page before last, `depth` records in. */
  deep: string;
  depth: number;
  /** Full pages spread over the data, each with a next page. */
  pages: string[];
  leads: string[];
}

/** Evenly spread picks of `count` out of `0 .. n - 1`. */
function spread(n: number, count: number): number[] {
  if (n <= count) return Array.from({ length: n }, (_, i) => i);
  return Array.from({ length: count }, (_, i) => Math.floor((i * n) / count));
}

/** The URLs the load requests; cursors are signed as the server signs them, with the store's secret. */
export async function pathsOf(data: LeadData): Promise<Paths> {
  const store = new SqliteStore({ path: data.url.slice('sqlite:'.length) });
  await store.migrate();
  try {
    const codec = new CursorCodec();
    codec.setSecret(await loadCursorSecret(store));
    const scope = { endpoint: 'leads.list' as const, team: BENCH_TEAM, filter: '' };
    const pageOf = (after: number) =>
      after === 0
        ? `/v1/leads?limit=${PAGE}`
        : `/v1/leads?limit=${PAGE}&cursor=${encodeListCursor(codec, scope, { seq: after, id: '' })}`;
    // The keyset position before every PAGE-th record: starts[k] opens page k.
    const starts: number[] = [];
    const depth = Math.max(0, data.leads - 2 * PAGE);
    let deepAfter = 0;
    let after = 0;
    let index = 0;
    for (;;) {
      const rows = await store.listRecords({ team: BENCH_TEAM, kind: 'lead', after, limit: 10_000 });
      for (const row of rows) {
        if (index % PAGE === 0) starts.push(after);
        if (index === depth) deepAfter = after;
        after = row.seq;
        index++;
      }
      if (rows.length < 10_000) break;
    }
    const full = Math.floor(index / PAGE) - (index % PAGE === 0 ? 1 : 0);
    return {
      first: pageOf(0),
      deep: pageOf(deepAfter),
      depth,
      pages: spread(full, ROTATED_PAGES).map((k) => pageOf(starts[k] ?? 0)),
      leads: spread(data.leads, ROTATED_LEADS).map((i) => `/v1/leads/lead_B${i}`),
    };
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

/**
 * A bare server holding the API's answer to every path, fetched once from `api`; the same answers from a bare
 * Fastify app; and that app reading each lead with the store's statement from `dbPath` (bare-server.ts).
 */
async function bareServers(
  api: ServerProcess,
  key: string,
  paths: readonly string[],
  dbPath: string,
): Promise<{ bare: ServerProcess; fastify: ServerProcess; store: ServerProcess }> {
  const bodies: [string, string][] = [];
  for (const path of paths) bodies.push([path, (await fetchOk(api.origin + path, key)).toString('base64')]);
  const file = `${CACHE_DIR}bare-bodies.json`;
  writeFileSync(file, JSON.stringify(bodies));
  return {
    bare: await startServerProcess('./bare-server.ts', [file]),
    fastify: await startServerProcess('./bare-server.ts', [file, 'fastify']),
    store: await startServerProcess('./bare-server.ts', [file, 'fastify-store', dbPath]),
  };
}

/** RSS of a fresh API process (page cache on, as served) after start and after the whole load. */
async function rssGrowth(
  data: LeadData,
  paths: Paths,
  plan: LoadPlan,
  nodeFlags: string[],
  packageDir?: string,
): Promise<{ start: Rss; after: Rss; heapKb?: { start: number; after: number } }> {
  // This checkout's server also says what its heap holds after a full collection, once its RSS is read.
  const ownServer = packageDir === undefined;
  const flags = ownServer ? [...nodeFlags, '--expose-gc'] : nodeFlags;
  const server = await startApi({ url: data.url, access: 'memory' }, packageDir, flags);
  try {
    const start = await server.rss();
    const heapStart = ownServer ? await server.heapAfterGcKb() : undefined;
    const headers = { authorization: `Bearer ${data.key}` };
    for (const rotation of [paths.pages, [paths.first], [paths.deep], paths.leads]) {
      const result = await load(server.origin, headers, plan.seconds, plan.connections, rotation);
      if (result.non2xx > 0 || result.errors > 0) throw new Error('memory run: requests refused');
    }
    const after = await server.rss();
    if (heapStart === undefined) return { start, after };
    return { start, after, heapKb: { start: heapStart, after: await server.heapAfterGcKb() } };
  } finally {
    await server.stop();
  }
}

/** Profiles each load's API while the load runs; a summary of where its CPU time went in each. */
async function profileApi(
  loads: { name: string; api: ServerProcess; paths: readonly string[] }[],
  headers: Record<string, string>,
  plan: LoadPlan,
  dir: string,
): Promise<string> {
  const out: string[] = [];
  for (const { name, api, paths } of loads) {
    const sub = join(dir, name);
    rmSync(sub, { recursive: true, force: true });
    mkdirSync(sub, { recursive: true });
    await api.profileStart();
    await load(api.origin, headers, plan.seconds, plan.connections, paths);
    await api.profileStop(join(sub, `api-${name}.cpuprofile`));
    out.push(`CPU profile of the API under the ${name} load (${sub}):`, '', summariseProfiles(sub));
  }
  return out.join('\n');
}

export async function listBench(options: ListBenchOptions): Promise<string> {
  const { plan } = options;
  const flags = options.apiNodeFlags ?? [];
  const data = await sqliteLeads(options.leads);
  const paths = await pathsOf(data);
  const api = await startApi({ url: data.url, access: 'memory' }, undefined, flags);
  // The same API with the page cache off: every request reads its rows from the store.
  const uncached = await startApi({ url: data.url, access: 'memory', pageCache: false }, undefined, flags);
  const servers: ServerProcess[] = [api, uncached];
  try {
    const headers = { authorization: `Bearer ${data.key}` };
    const deepPage = JSON.parse((await fetchOk(uncached.origin + paths.deep, data.key)).toString('utf8')) as {
      data: unknown[];
    };
    if (deepPage.data.length !== PAGE) throw new Error(`deep page holds ${deepPage.data.length} leads, not ${PAGE}`);
    const { bare, fastify, store } = await bareServers(
      uncached,
      data.key,
      [paths.first, ...paths.pages, ...paths.leads],
      data.url.slice('sqlite:'.length),
    );
    servers.push(bare, fastify, store);
    // The statement-only server must answer the API's bytes, or its rate says nothing about the API's.
    for (const path of paths.leads.slice(0, 20)) {
      const [a, b] = [await fetchOk(uncached.origin + path, data.key), await fetchOk(store.origin + path, data.key)];
      if (!a.equals(b))
        throw new Error(`${path}: the bare Fastify app with the store answers other bytes than the API`);
    }
    const firstBytes = (await fetchOk(bare.origin + paths.first, data.key)).length;
    process.stderr.write(
      `list: ${fmtInt(data.leads)} leads, first page ${fmtInt(firstBytes)} bytes, ${paths.pages.length} pages and ${paths.leads.length} leads in turn\n`,
    );
    const apiVariants = (prefix: string, cachedApi: ServerProcess, uncachedApi: ServerProcess): Variant[] => [
      { name: `${prefix}uncached-pages`, url: uncachedApi.origin, paths: paths.pages, headers, server: uncachedApi },
      { name: `${prefix}cached-first`, url: cachedApi.origin, paths: [paths.first], headers, server: cachedApi },
      { name: `${prefix}lead`, url: uncachedApi.origin, paths: paths.leads, headers, server: uncachedApi },
      { name: `${prefix}uncached-first`, url: uncachedApi.origin, paths: [paths.first], headers, server: uncachedApi },
      { name: `${prefix}uncached-deep`, url: uncachedApi.origin, paths: [paths.deep], headers, server: uncachedApi },
    ];
    const before: Variant[] = [];
    if (options.beforeDir) {
      const cachedBefore = await startApi({ url: data.url, access: 'memory' }, options.beforeDir, flags);
      servers.push(cachedBefore);
      const uncachedBefore = await startApi(
        { url: data.url, access: 'memory', pageCache: false },
        options.beforeDir,
        flags,
      );
      servers.push(uncachedBefore);
      // The earlier API must answer the same bytes, or the comparison means nothing.
      for (const path of [paths.first, paths.deep, paths.pages[1] ?? paths.first, paths.leads[0] ?? paths.first]) {
        const [a, b] = [
          await fetchOk(uncached.origin + path, data.key),
          await fetchOk(uncachedBefore.origin + path, data.key),
        ];
        if (!a.equals(b)) throw new Error(`--before: ${path} differs between the two checkouts`);
      }
      before.push(...apiVariants('before-', cachedBefore, uncachedBefore));
    }
    const m = await measure(
      [
        { name: 'bare-pages', url: bare.origin, paths: paths.pages, server: bare },
        { name: 'bare-first', url: bare.origin, paths: [paths.first], server: bare },
        { name: 'bare-leads', url: bare.origin, paths: paths.leads, server: bare },
        { name: 'fastify-leads', url: fastify.origin, paths: paths.leads, server: fastify },
        { name: 'store-leads', url: store.origin, paths: paths.leads, server: store },
        ...apiVariants('', api, uncached),
        ...before,
      ],
      plan,
    );
    const get = (name: string) => m.get(name) as Measured;
    const profile = options.profileDir
      ? await profileApi(
          [
            { name: 'uncached-pages', api: uncached, paths: paths.pages },
            { name: 'cached-first', api, paths: [paths.first] },
            { name: 'lead', api: uncached, paths: paths.leads },
          ],
          headers,
          plan,
          options.profileDir,
        )
      : '';
    for (const server of servers.splice(0)) await server.stop();

    process.stderr.write('list: RSS\n');
    const rss = await rssGrowth(data, paths, plan, flags);
    const rssRatio = rss.after.rssKb / rss.start.rssKb;
    const rssBefore = options.beforeDir ? await rssGrowth(data, paths, plan, flags, options.beforeDir) : undefined;
    const mb = (kb: number | undefined) => (kb === undefined ? '-' : fmtInt(kb / 1024));

    const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
    /** A row of the checks: this API's figure, the earlier one's with --before, and the goal if any. */
    const check = (label: string, figure: (prefix: string) => number, op: '>=' | '<=' | '', goal: number) => {
      const now = figure('');
      const ok = op === '>=' ? now >= goal : now <= goal;
      return [
        label,
        ...(options.beforeDir ? [fmtRatio(figure('before-'))] : []),
        fmtRatio(now),
        op ? `${op} ${goal}` : '',
        op ? met(ok) : '',
      ];
    };
    const row = (label: string, name: string, baseline: string) => {
      const r = get(name);
      const b = get(baseline);
      return [
        label,
        fmtInt(r.median),
        String(r.p99Ms),
        name === baseline ? '1.00' : fmtRatio(ratio(r, b)),
        fmtInt(r.cpuUsPerRequest),
        fmtRatio(r.cpuUsPerRequest / b.cpuUsPerRequest),
      ];
    };
    const deep = fmtInt(paths.depth);
    return [
      `### Read path: GET /v1/leads?limit=100 and GET /v1/leads/{id} (SQLite, ${fmtInt(data.leads)} leads, ${plan.connections} connections, ${plan.rounds} x ${plan.seconds} s)`,
      '',
      `Baselines: a bare node:http server writing from memory the bytes the API sent for the same URL. ${paths.pages.length} pages and ${paths.leads.length} leads are requested in turn.`,
      '',
      table(
        ['server', 'req/s (median)', 'p99 ms', 'req/s ratio to its baseline', 'server CPU µs/req', 'CPU/req ratio'],
        ['l', 'r', 'r', 'r', 'r', 'r'],
        [
          row('bare, a different page each request (baseline of the uncached pages)', 'bare-pages', 'bare-pages'),
          row('bare, the first page again and again (baseline of the cached page)', 'bare-first', 'bare-first'),
          row('bare, a different lead each request (baseline of the single lead)', 'bare-leads', 'bare-leads'),
          row(
            'bare Fastify (one route, no hooks), a different lead each request: the framework alone',
            'fastify-leads',
            'bare-leads',
          ),
          row(
            "bare Fastify reading each lead with the store's statement (no key, limiter or team check)",
            'store-leads',
            'bare-leads',
          ),
          row('API, a different page each request, page cache off', 'uncached-pages', 'bare-pages'),
          row('API, the first page again and again, page cache on', 'cached-first', 'bare-first'),
          row('API, GET /v1/leads/{id}, a different lead each request', 'lead', 'bare-leads'),
          row('API, the first page, page cache off', 'uncached-first', 'bare-first'),
          row(`API, the page ${deep} records deep, page cache off`, 'uncached-deep', 'bare-first'),
          ...(options.beforeDir
            ? [
                row('before: a different page each request, page cache off', 'before-uncached-pages', 'bare-pages'),
                row('before: the first page again and again, page cache on', 'before-cached-first', 'bare-first'),
                row('before: GET /v1/leads/{id}, a different lead each request', 'before-lead', 'bare-leads'),
                row('before: the first page, page cache off', 'before-uncached-first', 'bare-first'),
                row(`before: the page ${deep} records deep, page cache off`, 'before-uncached-deep', 'bare-first'),
              ]
            : []),
        ],
      ),
      '',
      table(
        ['check', ...(options.beforeDir ? ['before (--before)'] : []), 'measured', 'goal', 'result'],
        ['l', ...(options.beforeDir ? ['r' as const] : []), 'r', 'r', 'l'],
        [
          check(
            'uncached page vs bare (req/s)',
            (p) => ratio(get(`${p}uncached-pages`), get('bare-pages')),
            '>=',
            LIST_TARGETS.uncachedOverBare,
          ),
          check(
            'cached page vs bare (req/s)',
            (p) => ratio(get(`${p}cached-first`), get('bare-first')),
            '>=',
            LIST_TARGETS.cachedOverBare,
          ),
          check(
            'GET /v1/leads/{id} vs bare (req/s)',
            (p) => ratio(get(`${p}lead`), get('bare-leads')),
            '>=',
            LIST_TARGETS.leadOverBare,
          ),
          check(
            'GET /v1/leads/{id} vs bare Fastify (req/s): what the API adds to the framework',
            (p) => ratio(get(`${p}lead`), get('fastify-leads')),
            '',
            Number.NaN,
          ),
          check(
            "ceiling of the single lead: bare Fastify with the store's statement vs bare (req/s)",
            () => ratio(get('store-leads'), get('bare-leads')),
            '',
            Number.NaN,
          ),
          check(
            `deep/first: cost of the page ${deep} records deep / the first page (page cache off)`,
            (p) => 1 / ratio(get(`${p}uncached-deep`), get(`${p}uncached-first`)),
            '<=',
            LIST_TARGETS.deepOverFirst,
          ),
          check(
            'server CPU per uncached page / per bare page',
            (p) => get(`${p}uncached-pages`).cpuUsPerRequest / get('bare-pages').cpuUsPerRequest,
            '',
            Number.NaN,
          ),
          check(
            'server CPU per GET /v1/leads/{id} / per bare answer',
            (p) => get(`${p}lead`).cpuUsPerRequest / get('bare-leads').cpuUsPerRequest,
            '',
            Number.NaN,
          ),
          [
            'RSS after load / after start (a fresh API, page cache on, every load above in turn)',
            ...(rssBefore ? [fmtRatio(rssBefore.after.rssKb / rssBefore.start.rssKb)] : []),
            `${fmtRatio(rssRatio)} (${mb(rss.after.rssKb)} / ${mb(rss.start.rssKb)} MB; anonymous ${mb(rss.after.anonKb)} / ${mb(rss.start.anonKb)}, file-backed ${mb(rss.after.fileKb)} / ${mb(rss.start.fileKb)}; of the anonymous, V8's old generation ${mb(rss.after.oldSpaceKb)} / ${mb(rss.start.oldSpaceKb)})`,
            // The memory goal is judged on anonymous memory once idle (`--only memory`, start-memory-bench.ts).
            '',
            '',
          ],
          [
            'heap and buffers kept after a full collection, after load / after start (what the process holds on to)',
            ...(rssBefore ? [''] : []),
            rss.heapKb
              ? `${fmtRatio(rss.heapKb.after / rss.heapKb.start)} (${mb(rss.heapKb.after)} / ${mb(rss.heapKb.start)} MB; page cache at most ${mb(DEFAULT_PAGE_CACHE_BYTES / 1024)} MB)`
              : '-',
            '',
            '',
          ],
          [
            `generating ${fmtInt(data.leads)} leads (write side, SQLite)`,
            ...(options.beforeDir ? [''] : []),
            `${fmtInt(data.leadsPerSecond)} leads/s (${fmtInt(data.generatedSeconds)} s)`,
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
