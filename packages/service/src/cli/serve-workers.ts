import cluster, { type Worker } from 'node:cluster';
import { createServer } from 'node:net';
import type { Limits } from '../limits.js';
import type { OperatorAddress } from '../operator-listener.js';
import { readSetting } from '../settings/read-setting.js';
import type { Store } from '../store/store.js';
import { openDb } from './options.js';

// `serve --workers N`: N API processes on one port. They share the database and Redis, so limits, quota,
// lockouts, revocation and cursors behave as if one process answered (docs/deploy.md). The primary only
// migrates, forks, replaces a worker that dies (with backoff), and stops the workers on SIGINT/SIGTERM.
//
// Scheduling is SCHED_NONE: the primary opens the listening socket and hands it to the workers, which
// accept from it themselves. The primary never accepts a connection, so none waits in it for a worker
// that has died; connections not yet accepted stay in the kernel's queue for the live workers.
//
// Kept whole: the primary's start, restart and stop share one state (workers, backoff, shutdown), and the
// order they run in is the point of the file.

export interface WorkersSettings {
  workers: number;
  db: string | undefined;
  host: string;
  port: number;
  redisUrl?: string | undefined;
  limits: Pick<
    Limits,
    'shutdownGraceMs' | 'workerRestartMs' | 'workerRestartMaxMs' | 'workerStartFailures' | 'redisBudgetMs'
  >;
  /**
   * The operator listener, served by the primary with every worker's metrics summed and the API reference
   * rendered from the OpenAPI document.
   */
  ops?: OperatorAddress | undefined;
  /** `--docs-url`: the reference the primary serves links there (each worker reads the flag itself). */
  docsUrl?: string | undefined;
  /** The internal listener: every worker listens on it (the cluster shares the port); checked here first. */
  internal?: { host: string; port: number } | undefined;
}

/** What the primary started. */
export interface PrimaryStarted {
  origin: string;
  opsOrigin?: string;
  /** Where the workers' internal listener answers, when configured. */
  internalOrigin?: string;
}

/** What a worker tells the primary: where it listens, or why it could not start. */
type WorkerMessage = { listening: string; internal?: string } | StartFailure;
interface StartFailure {
  failed: string;
  /** The error's code when the worker could not listen (the same address for every worker). */
  listenError?: string;
}

/** What the primary tells a listening worker: drain and exit, as SIGTERM would. */
const SHUTDOWN = { shutdown: true } as const;

/** After the grace period, how long the primary waits for its workers before it kills them. */
const STOP_MARGIN_MS = 5000;

/**
 * Delay before a worker is replaced: the first delay after a worker that ran at least the longest delay,
 * otherwise twice the previous one, at most the longest delay.
 */
export function restartDelay(previous: number | undefined, ranMs: number, limits: WorkersSettings['limits']): number {
  if (previous === undefined || ranMs >= limits.workerRestartMaxMs) return limits.workerRestartMs;
  return Math.min(previous * 2, limits.workerRestartMaxMs);
}

interface Slot {
  worker?: Worker;
  listening: boolean;
  startedAt: number;
  delay?: number;
  timer?: NodeJS.Timeout;
}

/**
 * Runs the primary; resolves once every worker listens, with the address they share. From then on the
 * primary exits by itself: 0 after a signal once every worker has drained and exited, 1 when a worker cannot
 * listen, when workers keep dying before they listen, or when its workers overrun the shutdown deadline.
 */
export async function runPrimary(settings: WorkersSettings): Promise<PrimaryStarted> {
  if (!settings.redisUrl) {
    throw new Error('--workers needs REDIS_URL: without it each process would keep its own limits and lockouts');
  }
  await checkListen(settings.host, settings.port);
  if (settings.internal) await checkListen(settings.internal.host, settings.internal.port);
  // Migrate once here so workers start on the current schema instead of racing for the migration lock.
  const store = await openDb(settings.db, { create: true });
  // With an operator listener the primary keeps the store (for readiness) until it exits.
  if (!settings.ops) await store.close();

  const { limits } = settings;
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  const slots: Slot[] = Array.from({ length: settings.workers }, () => ({ listening: false, startedAt: 0 }));
  let failuresInARow = 0;
  let lastFailure = '';
  let stopping = false;
  let exitCode = 0;
  let ready: (listening: { origin: string; internal?: string | undefined }) => void = () => undefined;
  const origin = new Promise<{ origin: string; internal?: string | undefined }>((resolve) => {
    ready = resolve;
  });
  const say = (line: string) => process.stderr.write(`crm-export: ${line}\n`);
  const live = () => slots.filter((slot) => slot.worker !== undefined);

  const killAll = () => {
    for (const slot of live()) slot.worker?.process.kill('SIGKILL');
  };

  /** Stops every worker and exits with `code` (or 1 if a worker failed to drain) once the last one has. */
  const stopAll = (code: number) => {
    exitCode = Math.max(exitCode, code);
    if (stopping) return;
    stopping = true;
    for (const slot of slots) clearTimeout(slot.timer);
    for (const slot of live()) {
      const worker = slot.worker as Worker;
      // A listening worker drains like on SIGTERM; one still starting has nothing to drain.
      if (slot.listening && worker.isConnected()) worker.send(SHUTDOWN, () => undefined);
      else worker.process.kill('SIGTERM');
    }
    if (live().length === 0) process.exit(exitCode);
    setTimeout(() => {
      say(`workers still running ${limits.shutdownGraceMs + STOP_MARGIN_MS} ms after the stop; killing them`);
      exitCode = 1;
      killAll();
    }, limits.shutdownGraceMs + STOP_MARGIN_MS);
  };

  const fork = (index: number) => {
    const slot = slots[index] as Slot;
    const worker = cluster.fork({ CRM_EXPORT_WORKER_INDEX: String(index) });
    Object.assign(slot, { worker, listening: false, startedAt: Date.now(), timer: undefined });
    let failure: StartFailure | undefined;
    worker.on('message', (message: WorkerMessage) => {
      if ('listening' in message) {
        slot.listening = true;
        slot.startedAt = Date.now();
        failuresInARow = 0;
        if (slots.every((s) => s.listening)) ready({ origin: message.listening, internal: message.internal });
      } else if ('failed' in message) {
        failure = message;
      }
    });
    worker.on('exit', (code, signal) => {
      slot.worker = undefined;
      const how = signal ?? `code ${code}`;
      if (stopping) {
        if (code !== 0 && signal === null) exitCode = 1;
        if (live().length === 0) process.exit(exitCode);
        return;
      }
      if (failure?.listenError !== undefined) {
        // The same address for every worker: retrying cannot help.
        say(listenMessage(settings, failure.listenError, failure.failed));
        return stopAll(1);
      }
      if (!slot.listening) {
        failuresInARow += 1;
        lastFailure = failure?.failed ?? `exited with ${how}`;
        if (failuresInARow >= limits.workerStartFailures) {
          say(`giving up: ${failuresInARow} workers in a row died before listening; the last: ${lastFailure}`);
          return stopAll(1);
        }
      }
      slot.delay = restartDelay(slot.delay, slot.listening ? Date.now() - slot.startedAt : 0, limits);
      say(`worker ${index} (pid ${worker.process.pid}) exited with ${how}; starting a new one in ${slot.delay} ms`);
      slot.timer = setTimeout(() => fork(index), slot.delay);
    });
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      say(`second ${signal}: killing the workers`);
      killAll();
      process.exit(1);
    }
    stopAll(0);
  };
  // Before any worker: an operator port in use fails the start like the API's own port.
  let opsOrigin: string | undefined;
  if (settings.ops) {
    try {
      opsOrigin = await startPrimaryOps(settings, settings.ops, store, slots);
    } catch (error) {
      await store.close();
      throw error;
    }
  }
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  for (let i = 0; i < settings.workers; i++) fork(i);
  const listening = await origin;
  return {
    origin: listening.origin,
    ...(opsOrigin ? { opsOrigin } : {}),
    ...(listening.internal ? { internalOrigin: listening.internal } : {}),
  };
}

/**
 * The primary's operator listener: /metrics sums the registries of the listening workers that answer in time
 * (worker-metrics.ts), /readyz checks the database with the primary's own store and needs at least one
 * listening worker; Redis is reported by a write of the primary's own client, within the Redis budget. The API
 * reference is rendered from the OpenAPI document of an app built here without listening (the same route
 * schemas the workers serve).
 */
async function startPrimaryOps(
  settings: WorkersSettings,
  at: OperatorAddress,
  store: Store,
  slots: readonly Slot[],
): Promise<string> {
  const { scrapeWorkers } = await import('./worker-metrics.js');
  const { checkReadiness, startOperatorListener } = await import('../operator-listener.js');
  const { openapiDocument } = await import('../http/openapi-document.js');
  const { redisClientOptions, redisState } = await import('../access/limits/redis-health.js');
  const document = await openapiDocument();
  let redis: import('ioredis').Redis | undefined;
  if (settings.redisUrl) {
    const { Redis } = await import('ioredis');
    redis = new Redis(settings.redisUrl, redisClientOptions(settings.limits.redisBudgetMs));
    // Reported on /readyz only; reconnects quietly.
    redis.on('error', () => undefined);
  }
  const server = await startOperatorListener({
    ...at,
    metrics: () => scrapeWorkers(slots),
    async readiness() {
      const redisNow =
        redis === undefined ? 'off' : await redisState(redis, 'crmx:health', settings.limits.redisBudgetMs);
      const readiness = await checkReadiness(store, redisNow);
      const count = {
        listening: slots.filter((slot) => slot.worker !== undefined && slot.listening).length,
        configured: settings.workers,
      };
      const ready = readiness.ready && count.listening > 0;
      return { ready, body: { ...readiness.body, status: ready ? 'ready' : 'not_ready', workers: count } };
    },
    docs: { document: () => document, docsUrl: settings.docsUrl },
  });
  return server.origin;
}

/**
 * In a worker of a primary with an operator listener: the registry the primary's scrape reads over the IPC
 * channel (worker-metrics.ts).
 */
export async function workerMetrics(): Promise<import('../metrics/metrics.js').Metrics> {
  const { workerRegistry } = await import('./worker-metrics.js');
  return workerRegistry();
}

/** Why `host:port` cannot be listened on, naming the port. */
function listenMessage(at: { host: string; port: number }, code: string, message: string): string {
  const where = `cannot listen on ${at.host}:${at.port}`;
  return code === 'EADDRINUSE' ? `${where}: port ${at.port} is already in use (${message})` : `${where}: ${message}`;
}

/**
 * Fails at once when the address cannot be listened on, before any worker starts; a worker that loses a race
 * for the port later reports it the same way.
 */
async function checkListen(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ host, port, exclusive: true }, resolve);
    });
  } catch (error) {
    const { code = '', message } = error as NodeJS.ErrnoException;
    throw new Error(listenMessage({ host, port }, code, message));
  }
  await new Promise((resolve) => probe.close(resolve));
}

/** In a worker: whether this one runs the feed jobs (only the first, so capture and retention run once). */
export function isFirstWorker(): boolean {
  return (readSetting('workerIndex') ?? 0) === 0;
}

/**
 * In a worker: tells the primary where it listens, and runs `shutdown` when the primary asks (the same
 * drain as SIGTERM; a message rather than a signal, so a worker that also got the terminal's SIGINT or the
 * service manager's SIGTERM does not count the primary's request as a second signal).
 */
export function reportListening(origin: string, shutdown: () => void, internal?: string): void {
  process.on('message', (message: unknown) => {
    if ((message as typeof SHUTDOWN | undefined)?.shutdown === true) shutdown();
  });
  send({ listening: origin, ...(internal ? { internal } : {}) }, () => undefined);
}

/**
 * In a worker that could not start: tells the primary why (an address it cannot listen on stops every worker
 * at once), then exits 1; its open channel to the primary would otherwise keep it alive.
 */
export async function exitOnStartFailure(error: unknown): Promise<never> {
  const failed = error instanceof Error ? error.message : String(error);
  // Under cluster the error comes from `bind`; without it, from `listen`.
  const { syscall, code } = error as NodeJS.ErrnoException;
  const failure: StartFailure = {
    failed,
    ...(['bind', 'listen'].includes(syscall ?? '') ? { listenError: code ?? '' } : {}),
  };
  process.stderr.write(`crm-export: worker ${readSetting('workerIndex') ?? '?'}: ${failed}\n`);
  await new Promise<void>((resolve) => send(failure, resolve));
  process.exit(1);
}

/** Sends to the primary unless the channel is gone (the primary died): never throws ERR_IPC_DISCONNECTED. */
function send(message: WorkerMessage, done: () => void): void {
  if (process.connected && process.send) process.send(message, undefined, undefined, () => done());
  else done();
}

export const isWorker = (): boolean => cluster.isWorker;
