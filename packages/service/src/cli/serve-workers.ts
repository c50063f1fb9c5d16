import cluster, { type Worker } from 'node:cluster';
import { resolveDbUrl } from './options.js';

// `serve --workers N`: N API processes on one port (node:cluster hands connections to them in turn).
// They share the database and Redis, so limits, quota, lockouts, revocation and cursors behave as if
// one process answered (docs/deploy.md). The primary only migrates, forks, replaces a worker that
// dies and forwards SIGINT/SIGTERM; it takes no requests.

export interface WorkersSettings {
  workers: number;
  db: string | undefined;
  redisUrl: string | undefined;
}

interface ListeningMessage {
  listening: string;
}

/** Runs the primary; resolves once every worker listens, with the address they share. */
export async function runPrimary(settings: WorkersSettings): Promise<string> {
  if (!settings.redisUrl) {
    throw new Error('--workers needs REDIS_URL: without it each process would keep its own limits and lockouts');
  }
  // Migrate once here so workers start on the current schema instead of racing for the migration lock.
  const { openStore } = await import('../store/open-store.js');
  const store = await openStore(resolveDbUrl(settings.db));
  await store.close();

  let stopping = false;
  const fork = (index: number): Worker => {
    const worker = cluster.fork({ CRM_EXPORT_WORKER_INDEX: String(index) });
    worker.on('exit', (code, signal) => {
      if (stopping) return;
      process.stderr.write(`worker ${index} exited (${signal ?? code}); starting a new one\n`);
      setTimeout(() => fork(index), 1000);
    });
    return worker;
  };
  const started = Array.from({ length: settings.workers }, (_, i) => fork(i));
  const origins = await Promise.all(
    started.map(
      (worker) =>
        new Promise<string>((resolve, reject) => {
          worker.on('message', (m: ListeningMessage) => m.listening && resolve(m.listening));
          worker.once('exit', (code) => reject(new Error(`a worker exited with ${code} before listening`)));
        }),
    ),
  );

  const stop = (signal: NodeJS.Signals) => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
    cluster.disconnect(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return origins[0] as string;
}

/** In a worker: whether this one runs the feed jobs (only the first, so capture and retention run once). */
export function isFirstWorker(): boolean {
  return (process.env.CRM_EXPORT_WORKER_INDEX ?? '0') === '0';
}

/** In a worker: tells the primary where it listens. */
export function reportListening(origin: string): void {
  process.send?.({ listening: origin } satisfies ListeningMessage);
}

export const isWorker = (): boolean => cluster.isWorker;
