import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { ingestFile } from '../../src/ingest/ingest-file.js';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { ndjson, VALID_EVENTS } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'crm-export-ingest-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
function file(text: string): string {
  const path = join(dir, `f${++files}.ndjson`);
  writeFileSync(path, text);
  return path;
}

describeEachBackend('ingest of an NDJSON file', (makeStore) => {
  let store: Store;
  const clock = new ManualClock();
  beforeEach(async () => {
    store = await makeStore();
  });

  it('applies every event of a valid file, in transactions of at most the batch size', async () => {
    const result = await ingestFile(file(ndjson(VALID_EVENTS)), { store, clock, batchSize: 4 });
    expect(result).toEqual({ outcome: 'applied', lines: 6, events: 6, duplicates: 0, batches: 2 });
    const lead = JSON.parse((await store.getRecord('lead', 'lead_1'))?.json ?? '{}');
    expect(lead).toMatchObject({ status: 'contacted', phone: '+4915123456789', stage: 'stg_new' });
  });

  it('ignores blank lines but counts them in line numbers', async () => {
    const text = ndjson(VALID_EVENTS.slice(0, 2)).replace('\n', '\n\n   \n');
    const bad = `${text}{"type":"member.joined"}\n`;
    const result = await ingestFile(file(bad), { store, clock });
    expect(result).toMatchObject({ outcome: 'invalid', errors: [{ line: 5 }] });
  });

  it('a bad line gets a clear error naming the line and the field, and nothing of the file is applied', async () => {
    const lines: unknown[] = [...VALID_EVENTS];
    lines[4] = { ...VALID_EVENTS[4], phone: 4915123456789 };
    const result = await ingestFile(file(ndjson(lines)), { store, clock, batchSize: 2 });
    expect(result).toEqual({ outcome: 'invalid', errors: [{ line: 5, field: 'phone', message: expect.any(String) }] });
    // The lines before the bad one were valid, and still nothing was applied.
    expect(await store.getEntity('organization', 'org_acme')).toBeUndefined();
    expect(await store.getEntity('team', 'team_acme1')).toBeUndefined();
  });

  it('names a missing field, an unknown field, a nested field, an unknown type and a line that is not JSON', async () => {
    const at = '2026-01-10T09:00:00Z';
    const lines = [
      JSON.stringify({ type: 'member.left', at }),
      JSON.stringify({ type: 'member.left', at, member: 'mem_a', colour: 'blue' }),
      JSON.stringify({ ...VALID_EVENTS[2], stages: [{ stage: 'stg_x' }] }),
      JSON.stringify({ type: 'lead.teleported', at }),
      '{"type": "member.left",',
      JSON.stringify({ type: 'lead.erased', at, lead: 'contact_1' }),
    ];
    const result = await ingestFile(file(`${lines.join('\n')}\n`), { store, clock });
    expect(result.outcome).toBe('invalid');
    const errors = result.outcome === 'invalid' ? result.errors : [];
    expect(errors.map(({ line, field }) => ({ line, field }))).toEqual([
      { line: 1, field: 'member' },
      { line: 2, field: 'colour' },
      { line: 3, field: 'stages.0.name' },
      { line: 4, field: 'type' },
      { line: 5, field: '(line)' },
      { line: 6, field: 'lead' },
    ]);
    // The message states the rule, never the value the line holds.
    expect(errors[5]?.message).not.toContain('contact_1');
  });

  it('a write-side error rolls back its whole batch, names the line, and keeps the batches before it', async () => {
    const lines = [
      ...VALID_EVENTS.slice(0, 4),
      { type: 'lead.created', at: '2026-01-11T10:30:00Z', team: 'team_acme1', lead: 'lead_2', status: 'new' },
      { type: 'lead.status_set', at: '2026-01-11T11:00:00Z', lead: 'lead_unknown', status: 'lost', actor: 'human' },
    ];
    const result = await ingestFile(file(ndjson(lines)), { store, clock, batchSize: 4 });
    expect(result).toMatchObject({
      outcome: 'write_failed',
      events: 4,
      appliedThroughLine: 4,
      rejected: { firstLine: 5, lastLine: 6 },
      line: 6,
      message: expect.stringContaining('lead_unknown'),
    });
    expect(await store.getEntity('team', 'team_acme1')).toBeDefined();
    // lead_2 was valid but in the rejected batch: not half-applied.
    expect(await store.getEntity('lead', 'lead_2')).toBeUndefined();
    expect(await store.getRecord('lead', 'lead_2')).toBeUndefined();
  });
});
