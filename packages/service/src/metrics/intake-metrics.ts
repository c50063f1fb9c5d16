import { Counter, Gauge, type Registry } from 'prom-client';
import { type IntakeSourceStatus, type IntakeStatusStore, intakeStatus } from './intake-status.js';

// The intake's metrics per source (docs/operations.md, "Metrics"), read from the store when Prometheus
// scrapes, as the feed lag is: one read of the sources and the quarantine serves every gauge of a scrape.
// Every process reads the same database, so under `serve --workers` the primary takes the largest value
// of the workers rather than their sum.

const PREFIX = 'crm_export_';

export interface IntakeMetricSources {
  store?: Partial<IntakeStatusStore>;
  now?: () => number;
}

/**
 * Registers the intake gauges on `registry`. `read` reads the figures (bounded by the caller's scrape
 * timeout); it returns undefined when the store is down or slow, and the gauges are then left empty.
 */
export function registerIntakeMetrics(
  registry: Registry,
  sources: () => IntakeMetricSources,
  within: <T>(promise: Promise<T>) => Promise<T | undefined>,
): void {
  const registers = [registry];
  // One read per scrape: every collect of the same scrape gets the same figures.
  let last: { at: number; figures: Promise<IntakeSourceStatus[] | undefined> } | undefined;
  const figures = (): Promise<IntakeSourceStatus[] | undefined> => {
    const { store, now } = sources();
    if (!store?.intakeSources || !store.quarantineSummary) return Promise.resolve(undefined);
    const at = (now ?? Date.now)();
    if (last && at - last.at < 1000) return last.figures;
    last = { at, figures: within(intakeStatus(store as IntakeStatusStore, at)) };
    return last.figures;
  };
  const gauge = (name: string, help: string, value: (s: IntakeSourceStatus) => number | null) =>
    new Gauge({
      name: `${PREFIX}${name}`,
      help,
      labelNames: ['source'] as const,
      aggregator: 'max',
      registers,
      async collect() {
        const list = await figures();
        this.reset();
        for (const s of list ?? []) {
          const v = value(s);
          if (v !== null) this.set({ source: s.source }, v);
        }
      },
    });
  gauge(
    'intake_last_seq',
    'Highest seq of each intake source that was handled (applied, duplicate or parked).',
    (s) => s.lastSeq,
  );
  gauge(
    'intake_last_event_timestamp_seconds',
    'Producer time (at) of the last event applied from each intake source, in seconds since the epoch.',
    (s) => (s.lastEventAt === null ? null : Date.parse(s.lastEventAt) / 1000),
  );
  gauge(
    'intake_lag_seconds',
    'Seconds from the producer time of the last event applied from each source to now.',
    (s) => s.lagSeconds,
  );
  gauge('intake_quarantine_events', 'Events of each intake source in the quarantine now.', (s) => s.quarantineEvents);
  gauge(
    'intake_quarantine_oldest_age_seconds',
    'Age of the oldest event of each intake source in the quarantine (absent when it is empty).',
    (s) => s.quarantineOldestSeconds,
  );
  new Counter({
    name: `${PREFIX}intake_events_total`,
    help: 'Events of each intake source by outcome: applied, duplicate, rejected, quarantined (read from the database).',
    labelNames: ['source', 'outcome'] as const,
    aggregator: 'max',
    registers,
    async collect() {
      const list = await figures();
      if (!list) return;
      this.reset();
      for (const s of list) {
        this.inc({ source: s.source, outcome: 'applied' }, s.applied);
        this.inc({ source: s.source, outcome: 'duplicate' }, s.duplicates);
        this.inc({ source: s.source, outcome: 'rejected' }, s.rejected);
        this.inc({ source: s.source, outcome: 'quarantined' }, s.quarantinedTotal);
      }
    },
  });
}
