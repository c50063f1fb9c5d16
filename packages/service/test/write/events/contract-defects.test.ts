import { afterEach, expect, it } from 'vitest';
import type { CrmEvent } from '../../../src/write/events/events.js';
import { describeEachBackend } from '../../support/backends.js';
import { BOARD, type Json, newLead, SERVICE, T0, TEAM, type World, world } from './fixture.js';

/** Every path in a value whose string is empty or only whitespace. */
function blankStrings(value: unknown, path = ''): string[] {
  if (typeof value === 'string') return value.trim() === '' ? [path] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => blankStrings(v, `${path}[${i}]`));
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => blankStrings(v, path ? `${path}.${k}` : k));
  return [];
}

describeEachBackend('write side: contract defects', (makeStore) => {
  let w: World;
  afterEach(async () => w?.store.close());

  const board = (stages: { stage: string; name: string; is_default?: boolean }[], extra: Json = {}): CrmEvent =>
    ({ type: 'board.upsert', at: T0, team: TEAM, board: 'brd_Two', name: 'Two', stages, ...extra }) as CrmEvent;

  it('every board names the stage where booked appointments land (a stg_ id, never null): the chosen one, else the default stage, else the first by position', async () => {
    w = await world(makeStore);
    expect((await w.record('board', BOARD))?.appointment_booked_stage).toBe('stg_Call');
    await w.apply(
      board([
        { stage: 'stg_A', name: 'A' },
        { stage: 'stg_B', name: 'B', is_default: true },
      ]),
    );
    expect((await w.record('board', 'brd_Two'))?.appointment_booked_stage).toBe('stg_B');
    await w.apply(
      board(
        [
          { stage: 'stg_A', name: 'A' },
          { stage: 'stg_B', name: 'B' },
        ],
        { appointment_booked_stage: null },
      ),
    );
    expect((await w.record('board', 'brd_Two'))?.appointment_booked_stage).toBe('stg_A');
  });

  it('when the booked-appointments stage is removed from the board, the board falls back to its default stage; omitted, the choice is kept', async () => {
    w = await world(makeStore);
    const stages = [
      { stage: 'stg_A', name: 'A', is_default: true },
      { stage: 'stg_B', name: 'B' },
      { stage: 'stg_C', name: 'C' },
    ];
    await w.apply(board(stages, { appointment_booked_stage: 'stg_C' }));
    await w.apply(board(stages));
    expect((await w.record('board', 'brd_Two'))?.appointment_booked_stage).toBe('stg_C');
    const v = await w.version('board', 'brd_Two');
    await w.apply(board(stages.slice(0, 2)));
    expect((await w.record('board', 'brd_Two'))?.appointment_booked_stage).toBe('stg_A');
    expect(await w.version('board', 'brd_Two')).toBe((v ?? 0) + 1);
    // Adding the stage back does not bring the old choice back: it was dropped with the stage.
    await w.apply(board(stages));
    expect((await w.record('board', 'brd_Two'))?.appointment_booked_stage).toBe('stg_A');
  });

  it('a board with no stages is refused (it could name no booked-appointments stage)', async () => {
    w = await world(makeStore);
    await expect(w.crm.apply(board([]))).rejects.toThrow(/stages/);
    expect(await w.record('board', 'brd_Two')).toBeUndefined();
  });

  it('never an empty string: a lead created or updated with empty name, surname, email, company, source_channel or source_detail exports null', async () => {
    w = await world(makeStore);
    const blank = { name: '', surname: '  ', email: '', company: '\t', source_channel: '', source_detail: ' ' };
    await w.apply(newLead('lead_Blank', { ...blank, source: 'api' }));
    const created = await w.record('lead', 'lead_Blank');
    expect(created).toMatchObject({ name: null, surname: null, email: null, company: null });
    expect(created).toMatchObject({ source_channel: null, source_detail: null });
    await w.apply(newLead('lead_Full', { name: 'Jo', surname: 'Doe', email: 'jo@example.org', company: 'X' }));
    await w.apply({ type: 'lead.updated', at: T0, lead: 'lead_Full', ...blank });
    expect(await w.record('lead', 'lead_Full')).toMatchObject({
      name: null,
      surname: null,
      email: null,
      company: null,
      source_channel: null,
      source_detail: null,
    });
  });

  it('never an empty string: a member with an empty display name, a team with a blank name, and every other string the write side exports', async () => {
    w = await world(makeStore);
    await w.apply(
      { type: 'member.joined', at: T0, team: TEAM, member: 'mem_Blank', display_name: '' },
      { type: 'team.upsert', at: T0, team: TEAM, name: ' ', business_hours_timezone: '' },
      newLead('lead_Cap', {
        capture: {
          source: '',
          source_hint: ' ',
          origin: '',
          campaign: { id: '', name: ' ' },
          click_network: '',
          audience: '',
          utm: { utm_source: '', utm_medium: 'cpc' },
          ad_referral: { a: ' ' },
        },
      }),
      {
        type: 'submission.received',
        at: T0,
        submission: 's1',
        lead: 'lead_Cap',
        external_provider: '',
        form: { id: '', name: '' },
      },
      {
        type: 'booking.created',
        at: T0,
        team: TEAM,
        booking: 'bkg_1',
        lead: 'lead_Cap',
        service: SERVICE,
        starts_at: '2026-02-01T10:00Z',
        ends_at: '2026-02-01T10:30Z',
      },
    );
    expect((await w.record('member', 'mem_Blank'))?.display_name).toBeNull();
    expect(await w.record('team', TEAM)).toMatchObject({ name: null, timezone: 'Europe/Berlin' });
    const attribution = await w.record('lead_attribution', 'lead_Cap');
    expect(attribution?.original_capture.utm).toEqual({ utm_medium: 'cpc' });
    expect(attribution?.original_capture.ad_referral).toBeNull();
    for (const [kind, id] of [
      ['member', 'mem_Blank'],
      ['team', TEAM],
      ['lead', 'lead_Cap'],
      ['lead_attribution', 'lead_Cap'],
      ['lead_response', 'lead_Cap'],
      ['booking', 'bkg_1'],
      ['board', BOARD],
    ] as const) {
      expect(blankStrings(await w.record(kind, id)), `${kind} ${id}`).toEqual([]);
    }
    for (const entry of await w.feed()) expect(blankStrings(JSON.parse(entry.body ?? 'null'))).toEqual([]);
  });

  it('text that must have a value (a board, stage or service name, a tag) is refused when empty or whitespace only', async () => {
    w = await world(makeStore);
    await expect(w.crm.apply(board([{ stage: 'stg_A', name: ' ' }]))).rejects.toThrow(/must not be empty/);
    await expect(
      w.crm.apply({ type: 'service.created', at: T0, team: TEAM, service: 'svc_Blank', name: '' }),
    ).rejects.toThrow(/must not be empty/);
    await expect(w.crm.apply(newLead('lead_Tag', { tags: ['vip', ''] }))).rejects.toThrow(/tags\.1/);
  });

  it("a merge where the kept lead's whatsapp_consent is null (nobody recorded an answer, never consent) and the duplicate's is true leaves the kept lead null: consent is never gained by a merge", async () => {
    w = await world(makeStore);
    await w.apply(
      newLead('lead_K', { whatsapp_consent: null }),
      newLead('lead_D', { whatsapp_consent: true, do_not_contact: true }),
      newLead('lead_K2', { whatsapp_consent: true, email_opt_out: false }),
      newLead('lead_D2', { whatsapp_consent: true, email_opt_out: true }),
      newLead('lead_K3', { whatsapp_consent: true }),
      newLead('lead_D3', { whatsapp_consent: false }),
    );
    await w.apply(
      { type: 'lead.merged', at: T0, kept: 'lead_K', duplicate: 'lead_D' },
      { type: 'lead.merged', at: T0, kept: 'lead_K2', duplicate: 'lead_D2' },
      { type: 'lead.merged', at: T0, kept: 'lead_K3', duplicate: 'lead_D3' },
    );
    const permissions = async (id: string) => (await w.record('lead', id))?.contact_permissions;
    // null + true -> null; do_not_contact: true wins.
    expect(await permissions('lead_K')).toMatchObject({ whatsapp_consent: null, do_not_contact: true });
    // true + true -> true; email_opt_out: true wins.
    expect(await permissions('lead_K2')).toMatchObject({ whatsapp_consent: true, email_opt_out: true });
    // false wins over everything.
    expect(await permissions('lead_K3')).toMatchObject({ whatsapp_consent: false });
  });

  it('a business-hours zone sent in another case (europe/vienna) is exported as the IANA name Europe/Vienna', async () => {
    w = await world(makeStore);
    await w.apply({ type: 'team.upsert', at: T0, team: TEAM, business_hours_timezone: 'europe/vienna' });
    expect((await w.record('team', TEAM))?.timezone).toBe('Europe/Vienna');
    await w.apply({ type: 'team.upsert', at: T0, team: TEAM, business_hours_timezone: 'AMERICA/NEW_YORK' });
    expect((await w.record('team', TEAM))?.timezone).toBe('America/New_York');
  });

  it('at accepts what the docs promise (+0200 offsets, times without seconds) and every time field is stored in UTC with milliseconds', async () => {
    w = await world(makeStore);
    await w.apply(
      { ...newLead('lead_T'), at: '2026-01-10T12:00+0200' },
      {
        type: 'booking.created',
        at: '2026-01-10T10:00:00.25+01',
        team: TEAM,
        booking: 'bkg_T',
        lead: 'lead_T',
        service: SERVICE,
        starts_at: '2026-02-01T10:00+0100',
        ends_at: '2026-02-01T09:30Z',
      },
    );
    expect((await w.record('lead', 'lead_T'))?.created_at).toBe('2026-01-10T10:00:00.000Z');
    expect(await w.record('booking', 'bkg_T')).toMatchObject({
      created_at: '2026-01-10T09:00:00.250Z',
      starts_at: '2026-02-01T09:00:00.000Z',
      ends_at: '2026-02-01T09:30:00.000Z',
    });
  });
});
