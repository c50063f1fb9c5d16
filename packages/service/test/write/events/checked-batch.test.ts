import { afterEach, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { demoEvents } from '../../../src/demo/demo-generator.js';
import type { Store } from '../../../src/store/store.js';
import { Crm } from '../../../src/write/events/crm.js';
import type { CrmEvent } from '../../../src/write/events/events.js';
import { checkEvent, normaliseEvent, stripContent } from '../../../src/write/events/parse-event.js';
import { describeEachBackend } from '../../support/backends.js';

// `applyBatch(events, { checked: true })` takes events already checked and in stored form (ingest's
// path) without checking or copying them again: the data it writes is the data the checking path writes.

const NOW = Date.parse('2026-03-01T00:00:00.000Z');

async function snapshot(store: Store, teams: string[]) {
  const feeds = await Promise.all(teams.map((team) => store.readFeed(team, 0, 100_000)));
  const leads = await Promise.all(
    teams.map((team) => store.listRecords({ team, kind: 'lead', after: 0, limit: 100_000 })),
  );
  return { feeds, leads };
}

describeEachBackend('checked batches', (makeStore) => {
  const stores: Store[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });

  it('events checked and normalised beforehand write the same records and feed as the same events checked by the write side', async () => {
    const chunks = [...demoEvents({ seed: 7, teams: 2, leads: 6, now: NOW })];
    const teams = chunks[0]!.events.flatMap((e) => (e.type === 'team.upsert' ? [e.team] : []));
    // Raw events as a file holds them: a blank optional text and a date-time with an offset to normalise.
    const batches: CrmEvent[][] = chunks.map((c) =>
      c.events.map((e) => (e.type === 'lead.created' ? { ...e, at: e.at.replace('Z', '+00:00'), company: '  ' } : e)),
    );
    const [plain, checked] = [await makeStore(), await makeStore()];
    stores.push(plain, checked);
    const clock = () => new ManualClock(NOW);
    const viaWriteSide = new Crm(plain, clock());
    const preChecked = new Crm(checked, clock());
    for (const batch of batches) {
      await viaWriteSide.applyBatch(batch);
      const stored = batch.map((event) => {
        const result = checkEvent(JSON.parse(JSON.stringify(event)));
        if (!result.ok) throw new Error(`${result.field} ${result.message}`);
        return normaliseEvent(stripContent(result.event));
      });
      await preChecked.applyBatch(stored, { checked: true });
    }
    const expected = await snapshot(plain, teams);
    expect(expected.feeds.flat().length).toBeGreaterThan(50);
    expect(await snapshot(checked, teams)).toEqual(expected);
  });
});
