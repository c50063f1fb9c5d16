import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { type Logger, pino } from 'pino';
import { createAccessControl } from './access/create-access-control.js';
import { type Clock, systemClock } from './clock.js';
import { DEFAULT_LIMITS, type Limits, RELEASE } from './config.js';
import { startFeedJobs } from './feed/feed-jobs.js';
import { buildApp } from './http/app.js';
import type { Store } from './store/store.js';

export interface ServerOptions {
  store: Store;
  host: string;
  /** 0 picks a free port. */
  port: number;
  clock?: Clock;
  limits?: Limits;
  logger?: Logger;
  /** Shares limiter state between processes when set (REDIS_URL). */
  redisUrl?: string;
  /** Closes server then store on SIGINT/SIGTERM and exits; off in tests that own the process. */
  handleSignals?: boolean;
  /** Runs capture and retention in this process (default true; with `--workers`, only the first worker). */
  feedJobs?: boolean;
}

export interface RunningServer {
  /** The address a client on this machine reaches the API at, without `/v1`. */
  origin: string;
  port: number;
  /** Stops accepting requests, waits for open ones and a running feed job, then closes Redis and the store. */
  close(): Promise<void>;
}

/**
 * JSON logs on standard error (standard output carries what the command prints for people). The
 * Authorization header is redacted wherever a request is logged; nothing else logs a key or a person.
 */
export function createLogger(level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino(
    {
      level,
      base: { service: 'crm-export', release: RELEASE, pid: process.pid },
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'key', 'secret'], censor: '[redacted]' },
    },
    pino.destination(2),
  );
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const clock = options.clock ?? systemClock;
  const limits = options.limits ?? DEFAULT_LIMITS;
  const logger = options.logger ?? createLogger();
  // No offline queue: while Redis reconnects the limiters fall back to memory instead of waiting; a command
  // timeout does the same when Redis stops answering without closing the connection (docs/limits.md).
  const redis = options.redisUrl
    ? new Redis(options.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1000 })
    : null;
  redis?.on('error', (error: Error) => logger.warn({ error: error.message }, 'redis unavailable'));
  if (redis) await redisReady(redis, logger);
  const access = createAccessControl({ store: options.store, clock, limits, ...(redis ? { redis } : {}) });
  const app = await buildApp({ store: options.store, access, clock, limits, logger, release: RELEASE });
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (error) {
    // A port in use must not leave a Redis connection holding the process open.
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
  // A wildcard listen is reached through the loopback address by a client on this machine.
  const reachable = ['0.0.0.0', '::', ''].includes(options.host) ? '127.0.0.1' : options.host;
  const origin = `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
  logger.info({ host: options.host, port, backend: options.store.backend, redis: redis !== null }, 'listening');

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await app.close();
      await stopJobs();
      redis?.disconnect();
      await options.store.close();
      logger.info('stopped');
    })();
    return closing;
  };

  if (options.handleSignals ?? true) {
    const onSignal = (signal: NodeJS.Signals) => {
      logger.info({ signal }, 'shutting down');
      close().then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }

  return { origin, port, close };
}

/**
 * Waits up to 5 s for Redis before taking requests: without it the first requests of a fresh process would
 * count in memory only. A Redis that stays down does not stop the API (the limiters fall back to memory).
 */
async function redisReady(redis: Redis, logger: Logger): Promise<void> {
  if (redis.status === 'ready') return;
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 5000);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  if (!ready) logger.warn('redis not ready after 5 s; limits count in this process until it is');
}
