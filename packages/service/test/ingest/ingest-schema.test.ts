import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Compile } from 'typebox/compile';
import { describe, expect, it } from 'vitest';
import { INGEST_SCHEMA_PATH, ingestSchemaDocument } from '../../src/ingest/ingest-schema.js';
import { EVENT_TYPES } from '../../src/write/events/events.js';
import { VALID_EVENTS } from './fixtures.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../../..');

describe('docs/ingest.schema.json', () => {
  const committed = JSON.parse(readFileSync(join(root, INGEST_SCHEMA_PATH), 'utf8')) as Record<string, unknown>;

  it('is the JSON Schema generated from the TypeBox events (stale: run npx tsx packages/service/scripts/generate-ingest-schema.ts)', () => {
    expect(committed).toEqual(ingestSchemaDocument());
  });

  it('has one variant per event type', () => {
    const variants = committed.anyOf as Array<{ properties: { type: { const: string } } }>;
    expect(variants.map((v) => v.properties.type.const).sort()).toEqual([...EVENT_TYPES].sort());
  });

  it('accepts the documented example events and rejects an unknown type', () => {
    const { $schema: _dialect, $comment: _comment, $id: _id, ...schema } = committed;
    const check = Compile(schema as never);
    for (const event of VALID_EVENTS) expect(check.Check(event)).toBe(true);
    expect(check.Check({ type: 'lead.teleported', at: '2026-01-10T09:00:00Z' })).toBe(false);
  });

  it('accepts the date-times docs/ingest.md promises for at (+0200 offsets, times without seconds) and refuses a leap second or a time without an offset', () => {
    const { $schema: _dialect, $comment: _comment, $id: _id, ...schema } = committed;
    const check = Compile(schema as never);
    const event = (at: string) => ({ type: 'member.left', at, member: 'mem_a' });
    for (const at of [
      '2026-01-10T09:00:00Z',
      '2026-01-10T11:00:00+0200',
      '2026-01-10T11:00+02:00',
      '2026-01-10T11:00+02',
    ])
      expect(check.Check(event(at)), at).toBe(true);
    for (const at of ['2016-12-31T23:59:60Z', '2026-01-10T09:00:00', '2026-01-10T24:00Z'])
      expect(check.Check(event(at)), at).toBe(false);
  });
});
