import cluster from 'node:cluster';
import { pino } from 'pino';
import type { Limits } from '../src/limits.js';
import type { Store } from '../src/store/store.js';
import { DEFAULT_LIMITS, PostgresStore, SqliteStore, startServer, systemClock } from './service.js';

// The API as `serve` runs it (startServer: access control, the request log's recorder, the listener), for
// the request log benchmark (usage-bench.ts): `workers` processes sharing one port through node:cluster, as
// `serve --workers N` does, each with its own store connections and recorder. Recording on or off as
// `REQUEST_LOG` would set it. The primary reports the port and, on request, the CPU time of every worker.
//
//   node --import tsx bench/usage-server.ts '{"url":"postgres://...","schema":"leads_2000","workers":2,"requestLog":true}'

export interface UsageServerConfig {
  url: string;
  schema?: string;
  workers: number;
  requestLog: boolean;
}

const config = JSON.parse(process.argv[2] as string) as UsageServerConfig;
/** As api-server.ts: the limiter does its work on every request but never refuses one. */
const LIMITS: Limits = { ...DEFAULT_LIMITS, itemsPerMinute: 1e12, readRequestsPerMinute: 1e12, dailyItemQuota: 1e12 };

async function worker(port: number): Promise<void> {
  const store: Store = config.url.startsWith('sqlite:')
    ? new SqliteStore({ path: config.url.slice('sqlite:'.length) })
    : new PostgresStore({ url: config.url, ...(config.schema ? { schema: config.schema } : {}) });
  await store.migrate();
  const server = await startServer({
    store,
    host: '127.0.0.1',
    port,
    clock: systemClock,
    limits: LIMITS,
    // Refusals only, and none are expected: the request log in the database is what is measured.
    logger: pino({ level: 'warn' }, pino.destination({ dest: '/dev/null', sync: true })),
    requestLog: config.requestLog,
    feedJobs: false,
    handleSignals: false,
  });
  const reply = (m: unknown) => process.send?.(m);
  process.on('message', (m: unknown) => {
    if (m === 'cpu') {
      const { user, system } = process.cpuUsage();
      reply({ cpuUs: user + system });
    }
    if (m === 'stop') void server.close().then(() => process.exit(0));
  });
  reply({ port: server.port });
}

if (config.workers <= 1) await worker(0);
else if (cluster.isPrimary) {
  const workers = Array.from({ length: config.workers }, () => cluster.fork());
  // Every worker listens on port 0, which cluster gives them as one shared port, as `serve --workers` shares its own.
  const ports = await Promise.all(
    workers.map((w) => new Promise<number>((resolve) => w.once('message', (m: { port: number }) => resolve(m.port)))),
  );
  process.send?.({ port: ports[0] });
  const ask = <T>(message: string) =>
    Promise.all(
      workers.map(
        (w) =>
          new Promise<T>((resolve) => {
            w.once('message', (m: T) => resolve(m));
            w.send(message);
          }),
      ),
    );
  process.on('message', (m: unknown) => {
    if (m === 'cpu') {
      void ask<{ cpuUs: number }>('cpu').then((all) => {
        const { user, system } = process.cpuUsage();
        process.send?.({ cpuUs: user + system + all.reduce((sum, w) => sum + w.cpuUs, 0) });
      });
    }
    if (m === 'stop') {
      void Promise.all(
        workers.map(
          (w) =>
            new Promise((resolve) => {
              w.once('exit', resolve);
              w.send('stop');
            }),
        ),
      ).then(() => process.exit(0));
    }
  });
} else {
  await worker(0);
}
