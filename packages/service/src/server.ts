// Kept whole: the API, operator and internal listeners, Redis and shutdown share one lifetime in startServer.
import type { AddressInfo } from 'node:net';
import closeWithGrace from 'close-with-grace';
import { Redis } from 'ioredis';
import { type DestinationStream, type Logger, pino } from 'pino';
import { redisClientOptions } from './access/limits/redis-health.js';
import { StoreAccessControl } from './access/store-access-control.js';
import { type Clock, systemClock } from './clock.js';
import { startFeedJobs } from './feed/feed-jobs.js';
import { buildApp } from './http/app.js';
import type { InternalSurface } from './http/internal-surface.js';
import type { TrustProxy } from './http/trust-proxy.js';
import type { InternalAddress, InternalListener } from './internal/internal-listener.js';
import { DEFAULT_LIMITS, type Limits } from './limits.js';
import type { Metrics, RedisState } from './metrics/metrics.js';
import {
  checkReadiness,
  listenerOrigin,
  type OperatorAddress,
  type OperatorListener,
  type Readiness,
  startOperatorListener,
} from './operator-listener.js';
import { RELEASE } from './service-names.js';
import { readSetting } from './settings/read-setting.js';
import type { Store } from './store/store.js';
import { UsageRecorder } from './usage/recorder.js';

export interface ServerOptions {
  store: Store;
  host: string;
  /** 0 picks a free port. */
  port: number;
  clock?: Clock;
  limits?: Limits;
  logger?: Logger;
  /** Level of the logger created when none is given (default: `LOG_LEVEL`, else info). */
  logLevel?: string;
  /** Shares limiter state between processes when set (REDIS_URL). */
  redisUrl?: string;
  /**
   * On SIGINT/SIGTERM: `close()`, then exit 0 (1 if it failed or overran); a second signal exits 1 at once.
   * Off in tests that own the process.
   */
  handleSignals?: boolean;
  /** Proxies whose `X-Forwarded-For` names the client (CRM_EXPORT_TRUST_PROXY); none by default. */
  trustProxy?: TrustProxy;
  /** Runs capture and retention in this process (default true; with `--workers`, only the first worker). */
  feedJobs?: boolean;
  /** Records last use, usage counts and the request log (docs/request-log.md); default: `REQUEST_LOG`, else on. */
  requestLog?: boolean;
  /** Counts requests and more; a worker of `serve --workers` gets one so the primary can sum them. */
  metrics?: Metrics;
  /**
   * The operator listener (metrics, liveness, readiness, the API reference under /docs/); none unless set.
   * Implies metrics. Opened before the API.
   */
  ops?: OperatorAddress;
  /**
   * Where the operator published the error page (`--docs-url`, without a trailing slash); unset, problem
   * bodies name each code under ERROR_TYPE_TAG and never link to the operator listener (internal).
   */
  docsUrl?: string;
  /**
   * The internal listener (intake, management API, console; docs/internal-listener.md); none unless set.
   * Opened after the API. `surfaces` replaces the default list (internal/surfaces.ts), for tests.
   */
  internal?: InternalAddress & { surfaces?: readonly InternalSurface[] };
}

export interface RunningServer {
  /** The address a client on this machine reaches the API at, without `/v1`. */
  origin: string;
  port: number;
  /**
   * Stops accepting and closes idle connections at once; requests in flight get `shutdownGraceMs` to finish,
   * then their connections are destroyed. Then waits for a running feed job and closes Redis and the store.
   */
  close(): Promise<void>;
  /** With `handleSignals`: what SIGTERM does (close, then exit the process); otherwise `close()`. */
  shutdown(): void;
  /** The operator listener's address, when `ops` was given. */
  opsOrigin?: string;
  /** This process's recorder of last use, usage and the request log; absent when recording is off. */
  usage?: UsageRecorder;
  /** The internal listener's address, when `internal` was given. */
  internalOrigin?: string;
}

/** Time closing Redis and the store may take after the grace period before the process exits 1 anyway. */
const CLEANUP_MS = 5000;

/**
 * JSON logs on standard error (standard output carries what the command prints for people). The
 * Authorization header is redacted wherever a request is logged; nothing else logs a key or a person.
 */
export function createLogger(
  level: string = readSetting('logLevel') as string,
  destination: DestinationStream = pino.destination({ dest: 2, sync: true }),
): Logger {
  return pino(
    {
      level,
      base: { service: 'crm-export', release: RELEASE, pid: process.pid },
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'key', 'secret'], censor: '[redacted]' },
    },
    // Synchronous by default: every line is written before the process exits, and a standard error whose
    // reader is gone cannot hang the exit (pino's exit-time flush of an asynchronous destination loops
    // forever on EPIPE). A line per request costs some throughput (docs/performance.md); LOG_LEVEL=warn keeps
    // only refusals and errors.
    destination,
  );
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const clock = options.clock ?? systemClock;
  const limits = options.limits ?? DEFAULT_LIMITS;
  const logger = options.logger ?? createLogger(options.logLevel);
  // Client settings agree with the limits' Redis budget; while Redis is away (hung, refusing, slow) the limits
  // count in this process's memory, reported once when it goes and once when it comes back (docs/limits.md).
  const redis = options.redisUrl ? new Redis(options.redisUrl, redisClientOptions(limits.redisBudgetMs)) : null;
  if (redis) await redisReady(redis);
  // prom-client (about 90 modules) is loaded only when something reads the counts.
  const metrics = options.metrics ?? (options.ops ? new (await import('./metrics/metrics.js')).Metrics() : undefined);
  const access = new StoreAccessControl({
    store: options.store,
    clock,
    limits,
    logger,
    ...(redis ? { redis } : {}),
    ...(metrics ? { onRedisAway: (reason) => metrics.redisWentAway(reason) } : {}),
  });
  const redisState = (): RedisState => (redis === null ? 'off' : access.redisUp ? 'up' : 'away');
  metrics?.watch({ redisState, store: options.store, now: () => clock.now() });
  // Last use, usage counts and the request log, written every `requestLogFlushMs` (docs/request-log.md).
  const usage =
    (options.requestLog ?? readSetting('requestLog') === 'on')
      ? new UsageRecorder({
          store: options.store,
          clock,
          limits,
          ...(metrics ? { onDrop: () => metrics.requestLogDropped() } : {}),
          onError: (error) => {
            metrics?.requestLogWriteFailed();
            logger.warn({ error: error instanceof Error ? error.message : String(error) }, 'request log not written');
          },
        }).start()
      : undefined;
  const app = await buildApp({
    store: options.store,
    access,
    ...(usage ? { usage } : {}),
    clock,
    limits,
    logger,
    release: RELEASE,
    ...(metrics ? { metrics } : {}),
    ...(options.trustProxy ? { trustProxy: options.trustProxy } : {}),
    ...(options.docsUrl ? { docsUrl: options.docsUrl } : {}),
  });
  let ops: OperatorListener | undefined;
  let internal: InternalListener | undefined;
  // Readiness also needs the API itself: not before it listens, and not once shutdown has begun, so a load
  // balancer neither sends the first requests early nor keeps sending during the grace period.
  let stopping = false;
  const apiState = (): Readiness['body']['api'] =>
    stopping ? 'stopping' : app.server.listening ? undefined : 'starting';
  try {
    if (options.ops && metrics) {
      // The operator listener first: the reference it serves is rendered from this app's OpenAPI document.
      await app.ready();
      ops = await startOperatorListener({
        ...options.ops,
        metrics: async () => ({ contentType: metrics.registry.contentType, text: await metrics.registry.metrics() }),
        readiness: async () => {
          const readiness = await checkReadiness(options.store, redisState(), () => metrics.databaseError());
          const api = apiState();
          if (!api) return readiness;
          return { ready: false, body: { ...readiness.body, status: 'not_ready', api } };
        },
        docs: { document: () => app.swagger() as unknown as Record<string, unknown>, docsUrl: options.docsUrl },
      });
    }
    await app.listen({ host: options.host, port: options.port });
    if (options.internal) {
      // Intake, the management API and the console load only when the internal listener is configured.
      const [{ OperatorTokenAuth }, { startInternalListener }, { internalSurfaces }] = await Promise.all([
        import('./access/operator-tokens.js'),
        import('./internal/internal-listener.js'),
        import('./internal/surfaces.js'),
      ]);
      const { surfaces, ...at } = options.internal;
      const tokens = new OperatorTokenAuth({
        store: options.store,
        clock,
        // Counted apart from API keys, on the same counters (Redis when shared), with the same limits.
        lockout: access.lockoutFor('opauth', limits),
        cacheMs: limits.keyCacheMs,
        onLastUseError: (error) =>
          logger.warn({ error: error instanceof Error ? error.message : String(error) }, 'token last use not recorded'),
      });
      internal = await startInternalListener(at, {
        store: options.store,
        clock,
        limits,
        tokens,
        surfaces: surfaces ?? internalSurfaces(),
        logger,
        metrics,
        trustProxy: options.trustProxy,
        docsUrl: options.docsUrl,
        access,
        usage,
      });
    }
  } catch (error) {
    // A port in use must not leave a Redis connection or the operator listener holding the process open.
    await ops?.close();
    access.close();
    redis?.disconnect();
    await app.close();
    throw error;
  }
  // Capture of teams a key newly names (until then their endpoints answer 409 capture_not_ready) and retention.
  const stopJobs =
    options.feedJobs === false
      ? async () => undefined
      : startFeedJobs({
          store: options.store,
          clock,
          limits,
          onError: (job, error) =>
            logger.error({ job, error: error instanceof Error ? error.message : String(error) }, 'feed job failed'),
        });
  const { port } = app.server.address() as AddressInfo;
  const origin = listenerOrigin(options.host, port);
  logger.info({ host: options.host, port, backend: options.store.backend, redis: redis !== null }, 'listening');
  if (ops) logger.info({ host: options.ops?.host, port: ops.port }, 'operator listener');
  if (internal) logger.info({ host: options.internal?.host, port: internal.port }, 'internal listener');

  let closing: Promise<void> | undefined;
  const close = () => {
    stopping = true;
    closing ??= (async () => {
      // Requests still running at the end of the grace period lose their connection; the rest closes normally.
      const cut = setTimeout(() => app.server.closeAllConnections(), limits.shutdownGraceMs);
      try {
        await Promise.all([app.close(), stopJobs(), ops?.close(), internal?.close(limits.shutdownGraceMs)]);
      } finally {
        clearTimeout(cut);
      }
      // After the API closed: what it recorded last is written before the store closes.
      await usage?.stop();
      access.close();
      redis?.disconnect();
      await options.store.close();
      logger.info('stopped');
    })();
    return closing;
  };

  let shutdown: () => void = () => void close();
  if (options.handleSignals ?? true) {
    // close-with-grace: one close on the first signal, exit 1 on a second one or if closing overruns.
    // A request to shut down after a signal (a worker gets both on Ctrl+C) joins the shutdown under way.
    let started = false;
    const handler = closeWithGrace(
      {
        delay: limits.shutdownGraceMs + CLEANUP_MS,
        logger: false,
        skip: NOT_OUR_EVENTS,
        onSecondSignal: (signal) => logger.warn({ signal }, 'second signal: exiting at once'),
        onTimeout: (delay) => logger.error({ delay }, 'shutdown overran; exiting'),
      },
      async ({ signal }) => {
        started = true;
        logger.info({ signal: signal ?? 'requested' }, 'shutting down');
        await close().catch((error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          throw error;
        });
      },
    );
    shutdown = () => {
      if (!started) handler.close();
    };
  }

  return {
    origin,
    port,
    close,
    shutdown: () => shutdown(),
    ...(usage ? { usage } : {}),
    ...(ops ? { opsOrigin: ops.origin } : {}),
    ...(internal ? { internalOrigin: internal.origin } : {}),
  };
}

/** Events close-with-grace would also take over; the service handles only SIGINT and SIGTERM. */
const NOT_OUR_EVENTS: closeWithGrace.AllEvents[] = [
  'SIGHUP',
  'SIGQUIT',
  'SIGILL',
  'SIGTRAP',
  'SIGABRT',
  'SIGBUS',
  'SIGFPE',
  'SIGSEGV',
  'SIGUSR2',
  'uncaughtException',
  'unhandledRejection',
  'beforeExit',
];

/**
 * Waits up to 5 s for Redis before taking requests: without it the first requests of a fresh process would
 * count in memory only. A Redis that stays down does not stop the API: the limits start "away" (one warning)
 * and use Redis as soon as it answers.
 */
async function redisReady(redis: Redis): Promise<void> {
  if (redis.status === 'ready') return;
  // Connection errors while waiting are expected (the limits start "away" and say so once); without a
  // listener ioredis would print each retry's error to stderr as an unhandled event.
  const quiet = () => undefined;
  redis.on('error', quiet);
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, 5000);
    redis.once('ready', done);
  });
  redis.off('error', quiet);
}
