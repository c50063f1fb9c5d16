import { afterEach, expect, it } from 'vitest';
import { Metrics } from '../../src/metrics/metrics.js';
import type { CrmEvent } from '../../src/write/events/events.js';
import { applyIntakeBatch } from '../../src/write/intake/apply-intake.js';
import { sample } from '../operator-listener/scrape.js';
import { describeEachBackend } from '../support/backends.js';
import { newLead, T0, type World, world } from '../write/events/fixture.js';

// The intake's metrics per source (docs/operations.md): last applied seq, the producer time of the last
// applied event and the lag behind it, counts by outcome, and the quarantine's size and oldest age.

const renamed = (lead: string): CrmEvent => ({ type: 'lead.updated', at: T0, lead, name: 'X' }) as CrmEvent;

describeEachBackend('the intake metrics', (makeStore) => {
  let w: World;
  afterEach(async () => w.store.close());

  it('report per source the last seq, last event time, lag, counts by outcome and the quarantine', async () => {
    w = await world(makeStore);
    const events = [newLead('lead_1'), renamed('lead_9'), renamed('lead_9')].map((event, i) => ({ seq: i + 1, event }));
    await applyIntakeBatch(w.store, w.clock, { source: 'crm-main', events });
    await applyIntakeBatch(w.store, w.clock, { source: 'crm-main', events: events.slice(0, 1) });
    const metrics = new Metrics({ processMetrics: false });
    const now = w.clock.now() + 90_000;
    metrics.watch({ store: w.store, now: () => now });
    const text = await metrics.registry.metrics();
    const source = { source: 'crm-main' };
    expect(sample(text, 'crm_export_intake_last_seq', source)).toBe(3);
    expect(sample(text, 'crm_export_intake_last_event_timestamp_seconds', source)).toBe(Date.parse(T0) / 1000);
    expect(sample(text, 'crm_export_intake_lag_seconds', source)).toBe((now - Date.parse(T0)) / 1000);
    expect(sample(text, 'crm_export_intake_events_total', { ...source, outcome: 'applied' })).toBe(1);
    expect(sample(text, 'crm_export_intake_events_total', { ...source, outcome: 'duplicate' })).toBe(1);
    expect(sample(text, 'crm_export_intake_events_total', { ...source, outcome: 'quarantined' })).toBe(2);
    expect(sample(text, 'crm_export_intake_quarantine_events', source)).toBe(2);
    expect(sample(text, 'crm_export_intake_quarantine_oldest_age_seconds', source)).toBe(90);
  });

  it('leave the intake gauges empty while no source has sent anything', async () => {
    w = await world(makeStore);
    const metrics = new Metrics({ processMetrics: false });
    metrics.watch({ store: w.store });
    expect(sample(await metrics.registry.metrics(), 'crm_export_intake_last_seq')).toBeUndefined();
  });
});
