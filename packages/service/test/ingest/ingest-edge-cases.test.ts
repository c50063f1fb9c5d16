import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { ingestFile, ingestStream } from '../../src/ingest/ingest-file.js';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { installFailingTrigger } from './failing-trigger.js';
import { ndjson, VALID_EVENTS } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'crm-export-ingest-edge-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
function file(text: string): string {
  const path = join(dir, `f${++files}.ndjson`);
  writeFileSync(path, text);
  return path;
}

const lead = (id: string, at = '2026-01-11T10:30:00Z') => ({
  type: 'lead.created',
  at,
  team: 'team_acme1',
  lead: id,
  status: 'new',
});

describeEachBackend('ingest edge cases', (makeStore) => {
  let store: Store;
  const clock = new ManualClock();
  beforeEach(async () => {
    store = await makeStore();
  });
  afterEach(async () => store.close());

  it('a timestamp such as 23:59:60Z is refused at validation with the line number, and nothing is applied', async () => {
    const lines = [...VALID_EVENTS.slice(0, 4), lead('lead_leap', '2016-12-31T23:59:60Z')];
    const result = await ingestFile(file(ndjson(lines)), { store, clock, batchSize: 2 });
    expect(result).toEqual({
      outcome: 'invalid',
      errors: [{ line: 5, field: 'at', message: expect.stringContaining('no leap second') }],
    });
    expect(await store.getEntity('team', 'team_acme1')).toBeUndefined();
  });

  it('any value Date cannot represent is refused at validation with the line number (30 February, year past 9999 in UTC)', async () => {
    const lines = [
      ...VALID_EVENTS.slice(0, 4),
      lead('lead_feb', '2026-02-30T10:00:00Z'),
      lead('lead_far', '9999-12-31T23:30:00-01:00'),
      { ...lead('lead_cap'), capture: { received_at: '2026-04-31T10:00Z' } },
    ];
    const result = await ingestFile(file(ndjson(lines)), { store, clock });
    expect(result).toMatchObject({
      outcome: 'invalid',
      errors: [
        { line: 5, field: 'at' },
        { line: 6, field: 'at' },
        { line: 7, field: 'capture.received_at' },
      ],
    });
  });

  it('every timestamp that validates can be stored: +0200 offsets and times without seconds are normalised to UTC with milliseconds', async () => {
    const lines = [
      ...VALID_EVENTS.slice(0, 4),
      lead('lead_offset', '2026-01-11T12:30:00+0200'),
      lead('lead_minutes', '2026-01-11T10:30Z'),
      lead('lead_hoursOffset', '2026-01-11T05:30:00.1234567-05'),
    ];
    const result = await ingestFile(file(ndjson(lines)), { store, clock });
    expect(result).toMatchObject({ outcome: 'applied', events: 7 });
    const createdAt = async (id: string) => JSON.parse((await store.getRecord('lead', id))?.json ?? '{}').created_at;
    expect(await createdAt('lead_offset')).toBe('2026-01-11T10:30:00.000Z');
    expect(await createdAt('lead_minutes')).toBe('2026-01-11T10:30:00.000Z');
    expect(await createdAt('lead_hoursOffset')).toBe('2026-01-11T10:30:00.123Z');
  });

  it('a database error keeps the report of which batches were committed', async () => {
    await installFailingTrigger(store, 'lead_boom');
    const lines = [...VALID_EVENTS.slice(0, 4), lead('lead_ok'), lead('lead_boom'), lead('lead_after')];
    const result = await ingestFile(file(ndjson(lines)), { store, clock, batchSize: 4 });
    expect(result).toMatchObject({
      outcome: 'failed',
      events: 4,
      batches: 1,
      appliedThroughLine: 4,
      rejected: { firstLine: 5, lastLine: 7 },
      message: expect.stringContaining('refused by a test trigger'),
    });
    expect(await store.getEntity('team', 'team_acme1')).toBeDefined();
    // The failing batch is not half-applied.
    expect(await store.getRecord('lead', 'lead_ok')).toBeUndefined();
  });

  it('a line changed after validation is reported once the batches before it are committed, and nothing from its batch is applied', async () => {
    const lines = [...VALID_EVENTS.slice(0, 4), lead('lead_ok'), lead('lead_changed')];
    const path = file(ndjson(lines));
    const changed = ndjson([...lines.slice(0, 5), { ...lead('lead_changed'), at: 'yesterday' }]);
    const result = await ingestFile(path, {
      store,
      clock,
      batchSize: 2,
      // The last validation report comes just before the apply pass reads the file again.
      onProgress: (p) => p.phase === 'validating' && writeFileSync(path, changed),
    });
    expect(result).toMatchObject({
      outcome: 'failed',
      events: 4,
      batches: 2,
      appliedThroughLine: 4,
      rejected: { firstLine: 5, lastLine: 5 },
      line: 6,
      message: expect.stringContaining('field at'),
    });
    expect(await store.getRecord('lead', 'lead_ok')).toBeUndefined();
  });

  it('a batch refused while the next one is read ahead is what the report names, even when a line read ahead no longer validates', async () => {
    await installFailingTrigger(store, 'lead_boom');
    const lines = [...VALID_EVENTS.slice(0, 4), lead('lead_boom'), lead('lead_ok'), lead('lead_changed')];
    const path = file(ndjson(lines));
    const changed = ndjson([...lines.slice(0, 6), { ...lead('lead_changed'), at: 'yesterday' }]);
    const result = await ingestFile(path, {
      store,
      clock,
      batchSize: 2,
      onProgress: (p) => p.phase === 'validating' && writeFileSync(path, changed),
    });
    expect(result).toMatchObject({
      outcome: 'failed',
      events: 4,
      batches: 2,
      appliedThroughLine: 4,
      rejected: { firstLine: 5, lastLine: 6 },
      message: expect.stringContaining('refused by a test trigger'),
    });
  });

  it('a failure reading the input keeps the report: nothing was committed', async () => {
    const result = await ingestFile(join(dir, 'no-such-file.ndjson'), { store, clock });
    expect(result).toMatchObject({ outcome: 'failed', events: 0, batches: 0, rejected: undefined });
    expect(result.outcome === 'failed' && result.message).toContain('ENOENT');
  });

  it('standard input is validated in one streaming pass and applied from memory, content dropped', async () => {
    const lines = [
      ...VALID_EVENTS,
      { type: 'lead.updated', at: '2026-01-11T12:00+01:00', lead: 'lead_1', notes: 'SECRET-NOTE', company: '' },
    ];
    const result = await ingestStream(Readable.from([ndjson(lines)]), { store, clock, batchSize: 3 });
    expect(result).toEqual({ outcome: 'applied', lines: 7, events: 7, duplicates: 0, batches: 3 });
    const record = JSON.parse((await store.getRecord('lead', 'lead_1'))?.json ?? '{}');
    expect(record).toMatchObject({ status: 'contacted', company: null });
  });

  it('standard input over the memory bound is refused and nothing is applied', async () => {
    const result = await ingestStream(Readable.from([ndjson(VALID_EVENTS)]), { store, clock, limitBytes: 300 });
    expect(result).toMatchObject({
      outcome: 'invalid',
      errors: [{ field: '(input)', message: expect.stringContaining('300 bytes') }],
    });
    expect(await store.getEntity('organization', 'org_acme')).toBeUndefined();
  });

  it('a database error while applying standard input keeps the report of which batches were committed', async () => {
    await installFailingTrigger(store, 'lead_boom');
    const lines = [...VALID_EVENTS.slice(0, 4), lead('lead_boom')];
    const result = await ingestStream(Readable.from([ndjson(lines)]), { store, clock, batchSize: 2 });
    expect(result).toMatchObject({
      outcome: 'failed',
      events: 4,
      batches: 2,
      appliedThroughLine: 4,
      rejected: { firstLine: 5, lastLine: 5 },
    });
  });
});
