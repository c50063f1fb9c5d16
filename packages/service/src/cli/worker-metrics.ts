import type { Worker } from 'node:cluster';
import { AggregatorRegistry, Gauge, Registry } from 'prom-client';
import { Metrics, SCRAPE_QUERY_MS } from '../metrics/metrics.js';

// `serve --workers` with an operator listener: the primary's /metrics asks every listening worker for its
// registry over the IPC channel and sums what answers in time (docs/operations.md). A worker that is starting,
// dead or stuck is left out and named by `worker_scraped`, so a scrape answers 200 with what the others
// report, even in a crash loop. prom-client's own cluster aggregation asks every forked worker, waits 5 s
// for all of them and fails the whole scrape when one is starting.

const REQUEST = 'crm-export:metrics-request';
const ANSWER = 'crm-export:metrics-answer';

/** Longest a scrape waits for a listening worker: a worker's own scrape may wait on the database that long. */
export const WORKER_SCRAPE_MS = SCRAPE_QUERY_MS + 500;

/** One registry's metrics as a worker sends them. */
type Json = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

interface Answer {
  type: typeof ANSWER;
  id: number;
  metrics?: Json;
}

/** One slot of the primary: its worker while one runs, and whether that one listens. */
export interface ScrapedSlot {
  readonly worker?: Worker | undefined;
  readonly listening: boolean;
}

/** In a worker: the registry the request path counts into, sent to the primary when it asks. */
export function workerRegistry(): Metrics {
  const metrics = new Metrics();
  process.on('message', (message: { type?: unknown; id?: unknown } | null) => {
    if (message?.type !== REQUEST || typeof message.id !== 'number') return;
    const id = message.id;
    const reply = (answer: Answer) => {
      if (process.connected && process.send) process.send(answer, undefined, undefined, () => undefined);
    };
    metrics.registry.getMetricsAsJSON().then(
      (json) => reply({ type: ANSWER, id, metrics: json }),
      () => reply({ type: ANSWER, id }),
    );
  });
  return metrics;
}

let nextRequest = 0;

/** One worker's metrics, or undefined when it does not answer within `ms` (or exits, or fails its scrape). */
function ask(worker: Worker, ms: number): Promise<Json | undefined> {
  const id = nextRequest++;
  return new Promise((resolve) => {
    const done = (json: Json | undefined) => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      resolve(json);
    };
    const onMessage = (message: Answer | null) => {
      if (message?.type === ANSWER && message.id === id) done(message.metrics);
    };
    const onExit = () => done(undefined);
    const timer = setTimeout(() => done(undefined), ms);
    worker.on('message', onMessage);
    worker.on('exit', onExit);
    worker.send({ type: REQUEST, id }, (error: Error | null) => {
      if (error) done(undefined);
    });
  });
}

/**
 * The primary's scrape: every listening worker's metrics summed (each metric as its `aggregator` says), and
 * `worker_scraped` per configured worker, 1 when its metrics are in this scrape.
 */
export async function scrapeWorkers(
  slots: readonly ScrapedSlot[],
  ms = WORKER_SCRAPE_MS,
): Promise<{ contentType: string; text: string }> {
  const answers = await Promise.all(
    slots.map((slot) =>
      slot.worker && slot.listening && slot.worker.isConnected() ? ask(slot.worker, ms) : Promise.resolve(undefined),
    ),
  );
  const own = new Registry();
  const scraped = new Gauge({
    name: 'crm_export_worker_scraped',
    help: "1 when this scrape holds the worker's metrics; 0 while it starts, once it died, or when it did not answer.",
    labelNames: ['worker'] as const,
    registers: [own],
  });
  for (const [index, answer] of answers.entries()) scraped.set({ worker: String(index) }, answer ? 1 : 0);
  const parts = answers.filter((answer): answer is Json => answer !== undefined);
  const registry = AggregatorRegistry.aggregate([...parts, await own.getMetricsAsJSON()]);
  return { contentType: registry.contentType, text: await registry.metrics() };
}
