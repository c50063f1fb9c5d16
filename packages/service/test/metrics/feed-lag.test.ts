import { afterEach, beforeEach, expect, it } from 'vitest';
import { Metrics } from '../../src/metrics/metrics.js';
import type { FeedEntry, Store } from '../../src/store/store.js';
import { sample } from '../operator-listener/scrape.js';
import { describeEachBackend } from '../support/backends.js';

// The feed lag gauge (docs/operations.md, "Feed lag") is the age of each team's newest feed entry. Retention
// drops removals older than the removal retention; a team that has been idle since its last removal must
// keep its series, growing, rather than vanish from the scrape when that removal expires.

const DAY = 86_400_000;
const NOW = Date.parse('2026-03-01T00:00:00.000Z');
const REMOVALS_BEFORE = NOW - 45 * DAY;
const SUPERSEDED_BEFORE = NOW - DAY;

const entry = (team: string, id: string, version: number, recordedAt: number, removed = false): FeedEntry => ({
  team,
  kind: 'lead',
  id,
  version,
  recordedAt,
  body: removed ? null : '{}',
  removed: removed ? 'deleted' : null,
});

describeEachBackend('the feed lag gauge', (makeStore) => {
  let store: Store;
  beforeEach(async () => {
    store = await makeStore();
  });
  afterEach(async () => {
    await store.close();
  });

  it('keeps growing for an idle team whose newest entry is a removal older than the retention', async () => {
    // A removal purges the record's earlier entries when it is written, so none is left behind it here.
    await store.write(async (tx) => {
      for (const e of [
        entry('team_idle', 'lead_a', 1, NOW - 60 * DAY),
        entry('team_idle', 'lead_b', 2, NOW - 55 * DAY, true),
        entry('team_idle', 'lead_c', 3, NOW - 50 * DAY, true),
        entry('team_busy', 'lead_d', 2, NOW - 60 * DAY, true),
        entry('team_busy', 'lead_e', 1, NOW - 3_600_000),
      ]) {
        await tx.appendFeed(e);
      }
    });
    // Retention as the feed job runs it.
    await store.trimFeed(REMOVALS_BEFORE, SUPERSEDED_BEFORE);
    // Expired removals behind a team's head still go; the head stays.
    const feedOf = async (team: string) => (await store.readFeed(team, 0, 10)).map((e) => `${e.id} ${e.removed}`);
    expect(await feedOf('team_idle')).toEqual(['lead_a null', 'lead_c deleted']);
    expect(await feedOf('team_busy')).toEqual(['lead_e null']);

    let now = NOW;
    const metrics = new Metrics({ processMetrics: false });
    metrics.watch({ store, now: () => now });
    const scrape = async () => metrics.registry.metrics();
    const first = await scrape();
    expect(sample(first, 'crm_export_feed_head_age_seconds', { team: 'team_idle' })).toBe((50 * DAY) / 1000);
    expect(sample(first, 'crm_export_feed_head_age_seconds', { team: 'team_busy' })).toBe(3600);
    now += 3_600_000;
    // A second retention run an hour later leaves the head too.
    await store.trimFeed(now - 45 * DAY, now - DAY);
    const later = await scrape();
    expect(sample(later, 'crm_export_feed_head_age_seconds', { team: 'team_idle' })).toBe((50 * DAY) / 1000 + 3600);
    expect(sample(later, 'crm_export_feed_head_age_seconds', { team: 'team_busy' })).toBe(7200);
  });
});
