import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { getHeapSpaceStatistics } from 'node:v8';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import type { Limits } from '../src/limits.js';
import type { Store } from '../src/store/store.js';
import { type AccessMode, openAccess, withoutLimits } from './bench-access.js';
import { BENCH_TEAM } from './lead-data.js';
import {
  buildApp,
  createLogger,
  DEFAULT_LIMITS,
  Metrics,
  PostgresStore,
  redisClientOptions,
  SqliteStore,
  StoreAccessControl,
  systemClock,
} from './service.js';

// The API under test, in a process of its own (started by harness.ts): the same buildApp the service
// runs, over a bench database, with access control as the bench asks. Reports its port and, on request,
// its peak or current RSS over IPC, like bare-server.ts. On request it also records a CPU profile of just the
// measured load (the inspector's profiler, which --cpu-prof uses, started and stopped over IPC, so
// start-up and module loading stay out of it).
//
//   node --import tsx bench/api-server.ts '{"url":"sqlite:...","access":"memory"}'

export interface ApiServerConfig {
  /** `sqlite:PATH` or `postgres://...`. */
  url: string;
  schema?: string;
  access: AccessMode;
  redisUrl?: string;
  /** False turns the page cache off, so every request reads its rows from the store. */
  pageCache?: boolean;
  /** PostgreSQL `application_name` of the store's connections (the db bench terminates them by it). */
  applicationName?: string;
  /** The request log (at info, to /dev/null through the service's logger), the metrics (as with --ops-port), or both. */
  observe?: 'log' | 'metrics' | 'both';
  /** The feed's hold-back (the feed bench walks to the end of a feed written moments before). */
  feedHoldBackMs?: number;
  /** False turns the feed's read-ahead off, so each page is read when it is asked for. */
  feedReadAhead?: boolean;
}

/** Rate limit and quota raised so the limiter does its work on every request but never refuses one. */
export const BENCH_LIMITS: Limits = {
  ...DEFAULT_LIMITS,
  itemsPerMinute: 1e12,
  readRequestsPerMinute: 1e12,
  dailyItemQuota: 1e12,
};

const config = JSON.parse(process.argv[2] as string) as ApiServerConfig;
const limits: Limits =
  config.feedHoldBackMs === undefined ? BENCH_LIMITS : { ...BENCH_LIMITS, feedHoldBackMs: config.feedHoldBackMs };
const store: Store = config.url.startsWith('sqlite:')
  ? new SqliteStore({ path: config.url.slice('sqlite:'.length) })
  : new PostgresStore({
      url: config.url,
      ...(config.schema ? { schema: config.schema } : {}),
      ...(config.applicationName ? { applicationName: config.applicationName } : {}),
    });
await store.migrate();

// The client settings `serve` uses, so a Redis fault costs here what it costs in production.
const redis =
  config.access === 'redis'
    ? new Redis(config.redisUrl ?? 'redis://127.0.0.1:6379', redisClientOptions(BENCH_LIMITS.redisBudgetMs))
    : undefined;
if (redis) await new Promise((resolve) => redis.once('ready', resolve));
// Each run counts under its own prefix so an earlier run's counters never interfere.
const real = new StoreAccessControl({
  store,
  clock: systemClock,
  limits,
  redis,
  redisPrefix: `crmx-bench-${randomUUID()}`,
  // The away/back lines, so a bench that breaks Redis shows them once each.
  logger: {
    warn: (fields, message) => process.stderr.write(`api-server: ${message} ${JSON.stringify(fields)}\n`),
    info: (fields, message) => process.stderr.write(`api-server: ${message} ${JSON.stringify(fields)}\n`),
  },
});
const access =
  config.access === 'open' ? openAccess([BENCH_TEAM]) : config.access === 'auth' ? withoutLimits(real) : real;

const app = buildApp({
  store,
  access,
  clock: systemClock,
  limits,
  logger:
    config.observe === 'log' || config.observe === 'both'
      ? createLogger('info', pino.destination({ dest: '/dev/null', sync: true }))
      : false,
  ...(config.observe === 'metrics' || config.observe === 'both' ? { metrics: new Metrics() } : {}),
  ...(config.pageCache === false ? { pageCacheBytes: 0 } : {}),
  ...(config.feedReadAhead === false ? { feedReadAheadPages: 0 } : {}),
});
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
if (address && typeof address === 'object') process.send?.({ port: address.port });

/** Resident memory by kind (Linux): anonymous (heap, buffers) and file-backed (mapped files, code). */
function rssParts(): { anonKb?: number; fileKb?: number } {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    return { anonKb: kb('RssAnon'), fileKb: kb('RssFile') };
  } catch {
    return {};
  }
}

/**
 * Memory V8 holds for its old generation, KiB: where objects that outlive two young collections go, garbage
 * or not, until the next full collection. It shows when requests' garbage ends up there (docs/performance.md).
 */
function oldSpaceKb(): number | undefined {
  const space = getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
  return space === undefined ? undefined : space.space_size / 1024;
}

const profiler = new Session();
process.on('message', (m: unknown) => {
  if (m === 'profile-start') {
    void (async () => {
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.start');
      process.send?.({ profiling: true });
    })();
  }
  if (typeof m === 'object' && m !== null && 'profileStop' in m) {
    void (async () => {
      const { profile } = await profiler.post('Profiler.stop');
      writeFileSync((m as { profileStop: string }).profileStop, JSON.stringify(profile));
      profiler.disconnect();
      process.send?.({ profiled: true });
    })();
  }
  if (m === 'rss') process.send?.({ maxRssKb: process.resourceUsage().maxRSS });
  if (m === 'rss-now')
    process.send?.({ rssKb: process.memoryUsage.rss() / 1024, ...rssParts(), oldSpaceKb: oldSpaceKb() });
  // What the heap and the buffers outside it (the page cache's) still hold once garbage is collected (the
  // process runs with --expose-gc for this). A dead Buffer's memory is freed by a callback V8 runs after the
  // collection that found it dead, so one collection alone still counted about 20 MB of dead pages: collect,
  // let those callbacks run, and collect again.
  if (m === 'heap-after-gc') {
    void (async () => {
      const gc = (globalThis as { gc?: () => void }).gc;
      for (let i = 0; i < 3; i++) {
        gc?.();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const { heapUsed, external } = process.memoryUsage();
      process.send?.({ heapUsedKb: (heapUsed + external) / 1024 });
    })();
  }
  if (m === 'cpu') {
    const { user, system } = process.cpuUsage();
    process.send?.({ cpuUs: user + system });
  }
  if (m === 'stop') {
    void (async () => {
      await app.close();
      redis?.disconnect();
      await store.close();
      // A normal exit, so --cpu-prof writes its profile.
      process.exit(0);
    })();
  }
});
