import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { ingestFile, ingestFollow } from '../../src/ingest/ingest-file.js';
import type { Store } from '../../src/store/store.js';
import type { CrmEvent } from '../../src/write/events/events.js';
import { describeEachBackend } from '../support/backends.js';
import { ndjson, VALID_EVENTS } from './fixtures.js';

// Ingest of events that carry ids (docs/ingest.md, "Event ids"): a file ingested again applies nothing
// twice, and `ingest - --follow` commits batch by batch while the stream stays open.

const dir = mkdtempSync(join(tmpdir(), 'crm-export-ingest-dedupe-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
function file(text: string): string {
  const path = join(dir, `f${++files}.ndjson`);
  writeFileSync(path, text);
  return path;
}

const WITH_IDS: CrmEvent[] = VALID_EVENTS.map((event, i) => ({ ...event, id: `ev-${i + 1}` }) as CrmEvent);
const renamed = (id: string, name: string, at = '2026-01-12T10:00:00Z'): CrmEvent =>
  ({ type: 'lead.updated', id, at, lead: 'lead_1', name }) as CrmEvent;

describeEachBackend('ingest of events with ids', (makeStore) => {
  let store: Store;
  const clock = new ManualClock();
  beforeEach(async () => {
    store = await makeStore();
  });
  afterEach(async () => store.close());

  const leadOne = async () => JSON.parse((await store.getRecord('lead', 'lead_1'))?.json ?? '{}');

  it('a file ingested again after an ambiguous failure applies nothing twice and reports the duplicates', async () => {
    const path = file(ndjson([...WITH_IDS, renamed('ev-7', 'Jo'), renamed('ev-8', 'Jonas K.')]));
    expect(await ingestFile(path, { store, clock, batchSize: 3 })).toMatchObject({
      outcome: 'applied',
      events: 8,
      duplicates: 0,
    });
    const version = (await store.getRecord('lead', 'lead_1'))?.version;
    const feed = await store.readFeed('team_acme1', 0, 1000);
    const again = await ingestFile(path, { store, clock, batchSize: 3 });
    expect(again).toMatchObject({ outcome: 'applied', events: 0, duplicates: 8 });
    expect((await store.getRecord('lead', 'lead_1'))?.version).toBe(version);
    expect(await store.readFeed('team_acme1', 0, 1000)).toEqual(feed);
    expect((await leadOne()).name).toBe('Jonas K.');
    const [source] = await store.intakeSources();
    expect(source).toMatchObject({ source: 'ingest', applied: 8, duplicates: 8 });
  });

  it('a file cut short and ingested whole applies only the events it did not apply before', async () => {
    const events = [...WITH_IDS, renamed('ev-7', 'Jo')];
    await ingestFile(file(ndjson(events.slice(0, 5))), { store, clock, batchSize: 2 });
    const result = await ingestFile(file(ndjson(events)), { store, clock, batchSize: 2 });
    expect(result).toMatchObject({ outcome: 'applied', events: 2, duplicates: 5 });
    expect((await leadOne()).name).toBe('Jo');
  });

  it('an id applied before with other content rolls its batch back and names the line (id_conflict)', async () => {
    await ingestFile(file(ndjson(WITH_IDS)), { store, clock });
    const result = await ingestFile(file(ndjson([renamed('ev-9', 'Kim'), renamed('ev-6', 'Other')])), {
      store,
      clock,
    });
    expect(result).toMatchObject({ outcome: 'write_failed', line: 2, message: expect.stringContaining('id_conflict') });
    expect((await leadOne()).name).toBe('Jonas');
  });

  it('ids of another --source are not duplicates of these', async () => {
    const path = file(ndjson([...WITH_IDS.slice(0, 5)]));
    await ingestFile(path, { store, clock });
    const other = await ingestFile(file(ndjson([renamed('ev-1', 'Kim')])), { store, clock, source: 'backfill' });
    expect(other).toMatchObject({ outcome: 'applied', events: 1, duplicates: 0 });
  });

  it('ingest - --follow commits each batch before the input ends', async () => {
    const input = new PassThrough();
    const following = ingestFollow(input, { store, clock, batchSize: 100, lingerMs: 20 });
    input.write(ndjson(WITH_IDS.slice(0, 5)));
    // The stream is still open: the first batch commits once its linger has passed.
    await until(async () => (await store.getRecord('lead', 'lead_1')) !== undefined);
    input.write(ndjson([WITH_IDS[5], renamed('ev-7', 'Jo')]));
    await until(async () => (await leadOne()).name === 'Jo');
    input.write(ndjson([WITH_IDS[0]]));
    input.end();
    expect(await following).toMatchObject({ outcome: 'applied', events: 7, duplicates: 1 });
  });

  it('ingest - --follow refuses an event without an id, after committing the batches before it', async () => {
    const input = new PassThrough();
    const following = ingestFollow(input, { store, clock, batchSize: 5, lingerMs: 20 });
    input.write(ndjson([...WITH_IDS.slice(0, 5), VALID_EVENTS[5]]));
    const result = await following;
    input.destroy();
    expect(result).toMatchObject({ outcome: 'failed', events: 5, line: 6 });
    expect(await store.getRecord('lead', 'lead_1')).toBeDefined();
  });
});

/** Waits until `check` holds, trying every few milliseconds (fails the test after 10 s). */
async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the condition did not hold within 10 s');
}
