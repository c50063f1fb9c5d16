import { createServer, type Server, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../../src/server.js';
import { freePort } from '../access/own-redis.js';
import { makeTestPostgresStore } from '../support/postgres.js';
import { opsGet, sample } from './scrape.js';

// Readiness while the database cannot be reached: the server's PostgreSQL store goes through a TCP proxy of
// the test's own, which the test closes (every connection through it dropped, new ones refused) and opens
// again. The shared PostgreSQL itself is never touched.

const PG_URL = process.env.PG_URL;

/** A TCP proxy to PostgreSQL on `port` that can be taken down and brought back on the same port. */
function pgProxy(port: number, target: URL) {
  let server: Server | undefined;
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  };
  return {
    async up(): Promise<void> {
      if (server?.listening) return;
      server = createServer((client) => {
        const upstream = new Socket();
        track(client);
        track(upstream);
        upstream.connect(Number(target.port || 5432), target.hostname, () => {
          client.pipe(upstream);
          upstream.pipe(client);
        });
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      await new Promise<void>((resolve, reject) => {
        server?.once('error', reject);
        server?.listen(port, '127.0.0.1', resolve);
      });
    },
    async down(): Promise<void> {
      const closed = new Promise((resolve) => server?.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

const silent = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, fatal() {}, child: () => silent } as never;

describe.skipIf(!PG_URL)(`readiness on PostgreSQL${PG_URL ? '' : ' (skipped: set PG_URL)'}`, () => {
  let proxy: ReturnType<typeof pgProxy>;
  let server: RunningServer;
  let ops: string;

  beforeAll(async () => {
    const target = new URL(PG_URL as string);
    const port = await freePort();
    proxy = pgProxy(port, target);
    await proxy.up();
    const viaProxy = new URL(target);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(port);
    const store = await makeTestPostgresStore(viaProxy.toString());
    server = await startServer({
      store,
      host: '127.0.0.1',
      port: 0,
      logger: silent,
      handleSignals: false,
      feedJobs: false,
      ops: { host: '127.0.0.1', port: 0 },
    });
    ops = server.opsOrigin as string;
  }, 30_000);

  afterAll(async () => {
    await proxy?.up().catch(() => undefined);
    await server?.close();
    await proxy?.down();
  });

  it('answers 503 database unreachable while PostgreSQL cannot be reached, and 200 once it can again', async () => {
    expect(await opsGet(ops, '/readyz')).toEqual({
      status: 200,
      body: '{"status":"ready","database":"ok","redis":"off"}',
    });
    const before = await opsGet(ops, '/metrics');
    expect(sample(before.body, 'crm_export_db_pool_connections', { state: 'max' })).toBe(10);
    expect(sample(before.body, 'crm_export_db_pool_connections', { state: 'total' })).toBeGreaterThanOrEqual(1);

    await proxy.down();
    expect(await opsGet(ops, '/readyz')).toEqual({
      status: 503,
      body: '{"status":"not_ready","database":"unreachable","redis":"off"}',
    });
    // The process itself is alive, and the API says the same as readiness.
    expect((await opsGet(ops, '/livez')).status).toBe(200);
    expect((await fetch(`${server.origin}/v1/health`)).status).toBe(503);
    const during = await opsGet(ops, '/metrics');
    expect(sample(during.body, 'crm_export_database_errors_total')).toBe(2);

    await proxy.up();
    expect(await opsGet(ops, '/readyz')).toEqual({
      status: 200,
      body: '{"status":"ready","database":"ok","redis":"off"}',
    });
    expect((await fetch(`${server.origin}/v1/health`)).status).toBe(200);
  }, 30_000);
});
