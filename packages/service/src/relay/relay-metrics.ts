import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';

// The relay's Prometheus metrics and its optional listener (GET /metrics, GET /livez), loopback by default.

const PREFIX = 'crm_export_relay_';

export class RelayMetrics {
  readonly registry = new Registry();
  readonly position = new Gauge({
    name: `${PREFIX}position`,
    help: 'The last outbox id the service answered for (its last applied seq of the source)',
    registers: [this.registry],
  });
  readonly lagRows = new Gauge({
    name: `${PREFIX}lag_rows`,
    help: 'Outbox rows after the position, not yet relayed (counted up to 1,000,000)',
    registers: [this.registry],
  });
  readonly lagSeconds = new Gauge({
    name: `${PREFIX}lag_seconds`,
    help: 'Age of the oldest outbox row not yet relayed, 0 when none',
    registers: [this.registry],
  });
  readonly events = new Counter({
    name: `${PREFIX}events_total`,
    help: 'Events the service answered for, by outcome (applied, duplicate, quarantined, rejected)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly posts = new Counter({
    name: `${PREFIX}posts_total`,
    help: 'Batches posted, by what came of them (committed, gap, retry, refused, unauthorized)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly blocked = new Gauge({
    name: `${PREFIX}blocked`,
    help: '1 while the next outbox row is refused by the service and the relay cannot move on',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: PREFIX });
  }
}

export interface MetricsListener {
  origin: string;
  close(): Promise<void>;
}

/** Serves `metrics` on host:port (0: any free port). */
export async function listenMetrics(metrics: RelayMetrics, host: string, port: number): Promise<MetricsListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(text);
        },
        () => {
          res.writeHead(500);
          res.end();
        },
      );
      return;
    }
    if (req.method === 'GET' && path === '/livez') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"live"}');
      return;
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    origin: `http://${shown}:${address.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
