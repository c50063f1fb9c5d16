import { beforeAll, expect, it } from 'vitest';
import { demoTeamIds } from '../../src/demo/demo-generator.js';
import { STORIES } from '../../src/demo/demo-stories.js';
import { runDemo } from '../../src/demo/run-demo.js';
import {
  BOOKING_STATUSES,
  CALL_OUTCOMES,
  LEAD_STATUSES,
  OUTCOME_BASES,
  PHONE_STATUSES,
  type RecordKind,
} from '../../src/schemas/enums.js';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';

type Json = Record<string, unknown> & { contact_permissions?: Record<string, unknown> };

/** Every live record of a kind in a team, through the store's keyset pages. */
async function all(store: Store, team: string, kind: RecordKind): Promise<Json[]> {
  const out: Json[] = [];
  let after = 0;
  for (;;) {
    const rows = await store.listRecords({ team, kind, after, limit: 500 });
    out.push(...rows.map((row) => JSON.parse(row.json) as Json));
    if (rows.length < 500) return out;
    after = rows[rows.length - 1]!.seq;
  }
}

const NOW = Date.parse('2026-03-01T00:00:00.000Z');
// Enough leads per team for every story to run once in each team.
const LEADS = STORIES.length + 8;

describeEachBackend('demo data', (makeStore) => {
  let store: Store;
  let teams: string[];
  const records = new Map<RecordKind, Json[]>();
  const values = (kind: RecordKind, field: string) => new Set((records.get(kind) ?? []).map((r) => r[field]));

  beforeAll(async () => {
    store = await makeStore();
    const result = await runDemo(store, { seed: 42, teams: 2, leads: LEADS, now: NOW });
    teams = result.teams;
    for (const kind of [
      'lead',
      'call',
      'conversation',
      'booking',
      'lead_attribution',
      'lead_response',
      'member',
    ] as const) {
      records.set(kind, (await Promise.all(teams.map((team) => all(store, team, kind)))).flat());
    }
  });

  it('creates two example teams of one organization, with the ids the seed names', async () => {
    expect(teams).toEqual(demoTeamIds({ seed: 42, teams: 2 }));
    const entities = await Promise.all(teams.map((t) => store.getEntity<{ organization: string | null }>('team', t)));
    expect(entities[0]?.state.organization).toEqual(expect.any(String));
    expect(entities[1]?.state.organization).toBe(entities[0]?.state.organization);
    for (const team of teams) {
      const record = await store.getRecord('team', team);
      expect(JSON.parse(record?.json ?? '{}')).toMatchObject({ id: team, object: 'team', livemode: false });
    }
  });

  it('has leads in every status and both record kinds (client records have status null)', () => {
    expect(values('lead', 'status')).toEqual(new Set([...LEAD_STATUSES, null]));
    expect(values('lead', 'record_kind')).toEqual(new Set(['lead', 'client']));
  });

  it('has valid, invalid and missing phones', () => {
    expect(values('lead', 'phone_status')).toEqual(new Set(PHONE_STATUSES));
  });

  it('has contact permission variants: do not contact, email opt-out, WhatsApp consent given, refused and unrecorded', () => {
    const permissions = (records.get('lead') ?? []).map((l) => l.contact_permissions!);
    expect(new Set(permissions.map((p) => p.whatsapp_consent))).toEqual(new Set([true, false, null]));
    expect(permissions.some((p) => p.do_not_contact === true)).toBe(true);
    expect(permissions.some((p) => p.email_opt_out === true && p.email_opt_out_at !== null)).toBe(true);
  });

  it('has merged, transferred, converted (with and without clearing pipeline data), archived and revived leads', () => {
    const leads = records.get('lead') ?? [];
    expect(leads.some((l) => l.merged_into !== null && l.archive_reason === 'merged')).toBe(true);
    expect(leads.some((l) => l.transferred_to !== null && l.archive_reason === 'family_transfer')).toBe(true);
    expect(leads.some((l) => l.source_detail === 'family_handoff')).toBe(true);
    expect(leads.some((l) => l.status === 'converted' && l.pipeline_cleared === true && l.board === null)).toBe(true);
    expect(leads.some((l) => l.status === 'converted' && l.pipeline_cleared === false && l.board !== null)).toBe(true);
    expect(leads.some((l) => l.revived_at !== null)).toBe(true);
    expect(values('lead', 'archive_reason').size).toBeGreaterThan(3);
  });

  it('has calls of every outcome and every outcome basis', () => {
    expect(values('call', 'outcome')).toEqual(new Set(CALL_OUTCOMES));
    expect(values('call', 'outcome_basis')).toEqual(new Set(OUTCOME_BASES));
    expect(values('call', 'lead').has(null)).toBe(true);
  });

  it('has conversations on several channels and bookings in every status', () => {
    expect(values('conversation', 'channel').size).toBeGreaterThanOrEqual(6);
    expect(values('conversation', 'status')).toEqual(new Set(['open', 'pending', 'closed']));
    expect(values('booking', 'status')).toEqual(new Set(BOOKING_STATUSES));
    // Bookings of an erased or deleted lead stay, with lead null.
    expect(values('booking', 'lead').has(null)).toBe(true);
  });

  it('has ad attribution: a frozen original capture and a latest submission', () => {
    const attribution = records.get('lead_attribution') ?? [];
    expect(attribution.some((a) => a.original_capture !== null && a.latest_submission !== null)).toBe(true);
    expect(
      attribution.some((a) => a.original_capture === null && a.original_capture_missing_reason === 'not_captured'),
    ).toBe(true);
  });

  it('has response facets shaped by message metadata (awaiting reply, WhatsApp receipts)', () => {
    expect(values('lead_response', 'awaiting_reply')).toEqual(new Set([true, false]));
    expect(values('lead_response', 'last_whatsapp_delivery_status')).toEqual(
      new Set(['delivered', 'read', 'failed', null]),
    );
  });

  it('marks every example record livemode false', () => {
    for (const [, list] of records) expect(list.every((r) => r.livemode === false)).toBe(true);
  });

  it('same seed, same records: a second run on another database gives identical records, ids included', async () => {
    const other = await makeStore();
    try {
      await runDemo(other, { seed: 42, teams: 2, leads: LEADS, now: NOW });
      for (const kind of ['lead', 'call', 'booking', 'lead_response'] as const) {
        for (const team of teams) {
          // updated_at is when the service recorded the version, not part of the generated data.
          const strip = (list: Json[]) => list.map(({ updated_at: _recorded, ...rest }) => rest);
          expect(strip(await all(other, team, kind))).toEqual(strip(await all(store, team, kind)));
        }
      }
    } finally {
      await other.close();
    }
  });
});
