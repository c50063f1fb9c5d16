import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DocsPages } from './http/docs/docs-pages.js';
import type { RedisState } from './metrics/metrics.js';
import type { Store } from './store/store.js';

// The operator listener (docs/operations.md): its own port, off the API's `/v1` surface and its firewall,
// loopback by default. GET /metrics (Prometheus text), /livez (the process answers), /readyz (the
// database answers and its schema is current) and, when given the OpenAPI document, the API reference under
// /docs/ (docs/reference.md). Neither probe reads the operator switches: `admin switches
// api off` turns /v1/health to 503 but leaves the process ready, so it is not restarted or taken out of a
// balancer for a deliberate pause.

/** How long readiness waits for the database before it answers 503. */
export const READINESS_TIMEOUT_MS = 2000;

export interface Readiness {
  ready: boolean;
  body: {
    status: 'ready' | 'not_ready';
    database: 'ok' | 'unreachable' | 'migrations_pending';
    redis: RedisState;
    /** Set by the primary of `serve --workers`. */
    workers?: { listening: number; configured: number };
    /** Set by a serving process: its API is not accepting requests yet, or no longer (shutting down). */
    api?: 'starting' | 'stopping';
  };
}

/**
 * Whether the database answers within the timeout and has every migration applied. Redis is reported, not
 * required: without it the limits count in process memory and the API still answers.
 */
export async function checkReadiness(
  store: Pick<Store, 'pendingMigrations'>,
  redis: RedisState,
  onDatabaseError: () => void = () => undefined,
  timeoutMs = READINESS_TIMEOUT_MS,
): Promise<Readiness> {
  let timer: NodeJS.Timeout | undefined;
  const database = await Promise.race([
    store.pendingMigrations().then(
      (pending) => (pending.length === 0 ? ('ok' as const) : ('migrations_pending' as const)),
      () => 'unreachable' as const,
    ),
    new Promise<'unreachable'>((resolve) => {
      timer = setTimeout(() => resolve('unreachable'), timeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (database === 'unreachable') onDatabaseError();
  const ready = database === 'ok';
  return { ready, body: { status: ready ? 'ready' : 'not_ready', database, redis } };
}

/** Where the operator listener listens. */
export interface OperatorAddress {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** When `port` is in use, listen on any free port instead of failing (the default listener of `start`). */
  orFreePort?: boolean;
}

export interface OperatorListenerOptions extends OperatorAddress {
  metrics(): Promise<{ contentType: string; text: string }>;
  readiness(): Promise<Readiness>;
  /**
   * Serve the API reference: `document` is the OpenAPI document; `docsUrl` where the operator published the
   * error page (its links then point there; unset, to this listener's own page, relative to the reference).
   */
  docs?: { document: () => Record<string, unknown>; docsUrl?: string | undefined };
}

export interface OperatorListener {
  origin: string;
  port: number;
  close(): Promise<void>;
}

export async function startOperatorListener(options: OperatorListenerOptions): Promise<OperatorListener> {
  const docs = options.docs ? new DocsPages(options.docs.document, options.docs.docsUrl) : undefined;
  const server = createServer((request, response) => {
    answer(options, docs, request, response).catch((error: unknown) => {
      // For the operator only (an aggregation that timed out, a worker gone): no request data is involved.
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end(`operator listener failed: ${error instanceof Error ? error.message : String(error)}\n`);
    });
  });
  // Probes and scrapes are short: an idle connection is not kept for long.
  server.keepAliveTimeout = 5000;
  server.requestTimeout = 10_000;
  let origin = '';
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      const failed = (error: NodeJS.ErrnoException) => reject(error);
      server.once('error', failed);
      server.listen({ host: options.host, port }, () => {
        server.off('error', failed);
        origin = listenerOrigin(options.host, (server.address() as AddressInfo).port);
        resolve();
      });
    });
  try {
    try {
      await listen(options.port);
    } catch (error) {
      if (!(options.orFreePort && (error as NodeJS.ErrnoException).code === 'EADDRINUSE')) throw error;
      await listen(0);
    }
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    const where = `operator listener: cannot listen on ${options.host}:${options.port}`;
    throw new Error(
      code === 'EADDRINUSE' ? `${where}: port ${options.port} is already in use` : `${where}: ${message}`,
    );
  }
  docs?.warm();
  const { port } = server.address() as AddressInfo;
  return {
    origin,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Where a client on this machine reaches a listener on `host`: a wildcard listen through the loopback address. */
export function listenerOrigin(host: string, port: number): string {
  const reachable = ['0.0.0.0', '::', ''].includes(host) ? '127.0.0.1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

async function answer(
  options: OperatorListenerOptions,
  docs: DocsPages | undefined,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const path = (request.url ?? '/').split('?')[0] as string;
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
    return;
  }
  if (docs?.answer(path, response)) return;
  switch (path) {
    case '/livez':
      json(response, 200, { status: 'ok' });
      return;
    case '/readyz': {
      const readiness = await options.readiness();
      json(response, readiness.ready ? 200 : 503, readiness.body);
      return;
    }
    case '/metrics': {
      const { contentType, text } = await options.metrics();
      response.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(text);
      return;
    }
    default:
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  }
}

function json(response: ServerResponse, status: number, body: object): void {
  response
    .writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
    .end(JSON.stringify(body));
}
