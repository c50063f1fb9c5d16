import { expect, it } from 'vitest';
import { demoEvents } from '../../src/demo/demo-generator.js';
import { STORIES } from '../../src/demo/demo-stories.js';
import { checkEvent, normaliseEvent, stripContent } from '../../src/write/events/parse-event.js';

// `runDemo` hands its events to the write side as checked and in stored form (`applyBatch` with
// `checked`), so the generator must build every event valid, without content and already normalised.

it('builds every event of every story valid and in stored form', () => {
  let events = 0;
  // Three teams, so a transfer has a team to go to; enough leads for every story and later random ones.
  for (const chunk of demoEvents({ seed: 11, teams: 3, leads: STORIES.length * 12, now: Date.parse('2026-05-01') })) {
    for (const event of chunk.events) {
      const checked = checkEvent(event);
      expect(checked, JSON.stringify(event)).toMatchObject({ ok: true });
      // Same fields in the same order: nothing stripped, no time or blank text changed.
      expect(JSON.stringify(normaliseEvent(stripContent(event)))).toBe(JSON.stringify(event));
      events += 1;
    }
  }
  expect(events).toBeGreaterThan(STORIES.length * 30);
});
