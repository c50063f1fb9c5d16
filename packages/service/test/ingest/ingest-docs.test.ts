import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { ingestFile } from '../../src/ingest/ingest-file.js';
import { EVENT_TYPES } from '../../src/write/events/events.js';
import { describeEachBackend } from '../support/backends.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const doc = readFileSync(join(root, 'docs/ingest.md'), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'crm-export-ingest-docs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('docs/ingest.md documents every event type', () => {
  const missing = EVENT_TYPES.filter((type) => !doc.includes(`| \`${type}\` |`));
  expect(missing).toEqual([]);
});

describeEachBackend('docs/ingest.md', (makeStore) => {
  it('its example file ingests as printed, and the message text it carries is not stored', async () => {
    const example = /```json\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(example).toBeDefined();
    const path = join(dir, 'example.ndjson');
    writeFileSync(path, example!);
    const store = await makeStore();
    try {
      const result = await ingestFile(path, { store, clock: new ManualClock() });
      expect(result).toMatchObject({ outcome: 'applied', events: example!.trim().split('\n').length });
      const response = JSON.parse((await store.getRecord('lead_response', 'lead_1'))?.json ?? '{}');
      expect(response.last_inbound_at).toBe('2026-01-11T11:06:00.000Z');
      expect(JSON.stringify(await store.getEntity('message', 'msg_1'))).not.toContain('never stored');
    } finally {
      await store.close();
    }
  });
});
