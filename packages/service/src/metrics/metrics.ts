// Kept whole: every metric's name and labels in one registry, read in one place when a dashboard is built.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { PoolUsage, Store } from '../store/store.js';
import { registerIntakeMetrics } from './intake-metrics.js';

// The process's Prometheus metrics (docs/operations.md, "Metrics"), served on the operator listener.
// The request path only increments counters whose labels are bounded: route templates, methods, statuses,
// error codes and refusal reasons. Everything else (Redis state, page cache, pool, feed lag, process) is
// read when Prometheus scrapes. Under `serve --workers` each worker keeps its own registry and the
// primary sums them (cli/worker-metrics.ts); gauges say how they combine.

/** The limits' backend: Redis shared, Redis away (counting in memory), or memory only (no REDIS_URL). */
export type RedisState = 'up' | 'away' | 'off';

/** What one answered request came to, as the request log and the request metrics record it. */
export interface RequestOutcome {
  route: string;
  status: number;
  code: string | null;
  ms: number;
  items: number;
  bytes: number;
}

/** What the metrics read of the page cache (http/page-cache.ts) when Prometheus scrapes. */
export interface PageCacheReadings {
  readonly size: number;
  readonly stats: { readonly hits: number; readonly misses: number; readonly hitBytes: number };
}

/** Which limiter decided, and how. */
export type LimiterName = 'firewall' | 'auth_lockout' | 'rate_sync' | 'rate_read' | 'quota';
export type LimiterDecision = 'allowed' | 'refused';

/** Where the scrape-time gauges read from; each is optional. */
export interface MetricSources {
  /** The limits' backend: Redis shared, Redis away (memory), or memory only (no REDIS_URL). */
  redisState?: () => RedisState;
  pageCache?: PageCacheReadings;
  /** What the feed's read-ahead pages came to (feed/feed-read-ahead.ts). */
  feedReadAhead?: { readonly used: number; readonly stale: number; readonly unused: number };
  /** The intake's gauges (intake-metrics.ts) read its two members when the store has them. */
  store?: Pick<Store, 'feedHeadTimes' | 'poolUsage'> & Partial<Pick<Store, 'intakeSources' | 'quarantineSummary'>>;
  /** Milliseconds since the epoch (the server's clock). */
  now?: () => number;
}

const PREFIX = 'crm_export_';

/** Longest a scrape waits for the database (the feed lag query). */
export const SCRAPE_QUERY_MS = 2000;

/** `promise`'s value, or undefined if it fails or takes longer than `ms`. */
async function withinMs<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requests;
  private readonly duration;
  private readonly items;
  private readonly bytes;
  private readonly refusals;
  private readonly limiter;
  private readonly redisAway;
  private readonly databaseErrors;
  private readonly logDrops;
  private readonly logWriteFailures;
  private readonly internalRequests;
  private sources: MetricSources = {};
  private readonly requestChildren = new Map<string, { inc(): void }>();
  private readonly limiterChildren = new Map<string, { inc(): void }>();
  private readonly routeChildren = new Map<
    string,
    { duration: { observe(value: number): void }; items: { inc(n: number): void }; bytes: { inc(n: number): void } }
  >();

  constructor(options: { processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: PREFIX });
    this.requests = new Counter({
      name: `${PREFIX}http_requests_total`,
      help: 'Requests answered, by route template, method, status and error code ("" when none).',
      labelNames: ['route', 'method', 'status', 'code'] as const,
      registers,
    });
    this.duration = new Histogram({
      name: `${PREFIX}http_request_duration_seconds`,
      help: 'Time from receiving a request to sending its answer, by route template.',
      labelNames: ['route'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.items = new Counter({
      name: `${PREFIX}items_served_total`,
      help: 'Items returned by successful answers, by route template.',
      labelNames: ['route'] as const,
      registers,
    });
    this.bytes = new Counter({
      name: `${PREFIX}http_response_bytes_total`,
      help: 'Bytes of response bodies, by route template.',
      labelNames: ['route'] as const,
      registers,
    });
    this.refusals = new Counter({
      name: `${PREFIX}refusals_total`,
      help: 'Requests refused by the firewall or by authentication, by reason.',
      labelNames: ['reason'] as const,
      registers,
    });
    this.limiter = new Counter({
      name: `${PREFIX}limiter_decisions_total`,
      help: 'Decisions of the firewall budget, the authentication lockout, the rate limits and the quota.',
      labelNames: ['limiter', 'decision'] as const,
      registers,
    });
    this.redisAway = new Counter({
      name: `${PREFIX}redis_away_total`,
      help: 'Times the limits lost Redis and fell back to process memory, by reason.',
      labelNames: ['reason'] as const,
      registers,
    });
    this.databaseErrors = new Counter({
      name: `${PREFIX}database_errors_total`,
      help: 'Requests and readiness checks that failed because the database could not be reached.',
      registers,
    });
    this.logDrops = new Counter({
      name: `${PREFIX}request_log_dropped_total`,
      help: 'Answered requests left out of the stored request log because its queue was full (their usage counts and last use were kept).',
      registers,
    });
    this.logWriteFailures = new Counter({
      name: `${PREFIX}request_log_write_failures_total`,
      help: 'Writes of the request log, usage counts and last use that failed; their rows wait for the next write.',
      registers,
    });
    this.internalRequests = new Counter({
      name: `${PREFIX}internal_requests_total`,
      help: 'Requests the internal listener answered (intake, management API, console), by route template, status and error code.',
      labelNames: ['route', 'status', 'code'] as const,
      registers,
    });
    const sources = () => this.sources;
    new Gauge({
      name: `${PREFIX}redis_up`,
      help: '1 while the limits are counted on Redis; 0 while Redis is away or not configured (min over workers).',
      aggregator: 'min',
      registers,
      collect() {
        const state = sources().redisState?.() ?? 'off';
        this.set(state === 'up' ? 1 : 0);
      },
    });
    new Gauge({
      name: `${PREFIX}page_cache_bytes`,
      help: 'Bytes of finished list pages held by the page cache.',
      registers,
      collect() {
        this.set(sources().pageCache?.size ?? 0);
      },
    });
    new Counter({
      name: `${PREFIX}page_cache_requests_total`,
      help: 'Page cache lookups, by result (hit or miss).',
      labelNames: ['result'] as const,
      registers,
      collect() {
        const stats = sources().pageCache?.stats;
        if (!stats) return;
        this.reset();
        this.inc({ result: 'hit' }, stats.hits);
        this.inc({ result: 'miss' }, stats.misses);
      },
    });
    new Counter({
      name: `${PREFIX}page_cache_hit_bytes_total`,
      help: 'Bytes answered from the page cache.',
      registers,
      collect() {
        const stats = sources().pageCache?.stats;
        if (!stats) return;
        this.reset();
        this.inc(stats.hitBytes);
      },
    });
    new Counter({
      name: `${PREFIX}feed_read_ahead_total`,
      help: 'Feed pages read ahead, by outcome: used (answered a request), stale (read again), unused (dropped).',
      labelNames: ['outcome'] as const,
      registers,
      collect() {
        const stats = sources().feedReadAhead;
        if (!stats) return;
        this.reset();
        for (const outcome of ['used', 'stale', 'unused'] as const) this.inc({ outcome }, stats[outcome]);
      },
    });
    new Gauge({
      name: `${PREFIX}db_pool_connections`,
      help: 'PostgreSQL pool connections, by state (total, idle, waiting requests, max); absent on SQLite.',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const usage: PoolUsage | undefined = sources().store?.poolUsage?.();
        if (!usage) return;
        for (const [state, value] of Object.entries(usage)) this.set({ state }, value);
      },
    });
    new Gauge({
      name: `${PREFIX}feed_head_age_seconds`,
      help: "Seconds since the newest entry of each team's feed was recorded (max over workers).",
      labelNames: ['team'] as const,
      aggregator: 'max',
      registers,
      async collect() {
        const { store, now } = sources();
        if (!store) return;
        this.reset();
        // A database that is down or slow leaves the gauge empty rather than failing or stalling the scrape.
        const heads = await withinMs(store.feedHeadTimes(), SCRAPE_QUERY_MS);
        if (heads === undefined) return;
        const at = (now ?? Date.now)();
        for (const head of heads) this.set({ team: head.team }, Math.max(0, (at - head.recordedAt) / 1000));
      },
    });
    registerIntakeMetrics(
      this.registry,
      () => this.sources,
      (p) => withinMs(p, SCRAPE_QUERY_MS),
    );
  }

  /** Where the scrape-time gauges read from (set once the server has its store, cache and Redis). */
  watch(sources: MetricSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** One finished request (onResponse). */
  request(method: string, outcome: RequestOutcome, refusal: string | null): void {
    const { route } = outcome;
    const code = outcome.code ?? '';
    // Bound children per label set: prom-client hashes a label object on every call otherwise.
    const key = `${route} ${method} ${outcome.status} ${code}`;
    let counted = this.requestChildren.get(key);
    if (!counted) {
      counted = this.requests.labels({ route, method, status: outcome.status, code });
      this.requestChildren.set(key, counted);
    }
    counted.inc();
    let perRoute = this.routeChildren.get(route);
    if (!perRoute) {
      perRoute = {
        duration: this.duration.labels({ route }),
        items: this.items.labels({ route }),
        bytes: this.bytes.labels({ route }),
      };
      this.routeChildren.set(route, perRoute);
    }
    perRoute.duration.observe(outcome.ms / 1000);
    if (outcome.items > 0) perRoute.items.inc(outcome.items);
    if (outcome.bytes > 0) perRoute.bytes.inc(outcome.bytes);
    if (refusal) this.refusals.inc({ reason: refusal });
    if (code === 'service_unavailable') this.databaseErrors.inc();
  }

  limiterDecision(limiter: LimiterName, decision: LimiterDecision): void {
    const key = `${limiter} ${decision}`;
    let child = this.limiterChildren.get(key);
    if (!child) {
      child = this.limiter.labels({ limiter, decision });
      this.limiterChildren.set(key, child);
    }
    child.inc();
  }

  redisWentAway(reason: string): void {
    this.redisAway.inc({ reason });
  }

  databaseError(): void {
    this.databaseErrors.inc();
  }

  /** An answered request left out of the stored request log: its queue was full (docs/request-log.md). */
  requestLogDropped(): void {
    this.logDrops.inc();
  }

  /** A write of the request log, usage counts and last use failed; the next one tries again. */
  requestLogWriteFailed(): void {
    this.logWriteFailures.inc();
  }

  /** One finished request of the internal listener; its route templates and codes are bounded too. */
  internalRequest(route: string, status: number, code: string | null): void {
    this.internalRequests.inc({ route, status, code: code ?? '' });
    if (code === 'service_unavailable') this.databaseErrors.inc();
  }
}
