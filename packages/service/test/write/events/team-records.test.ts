import { afterEach, expect, it } from 'vitest';
import { describeEachBackend } from '../../support/backends.js';
import { BOARD, MEMBERS, newLead, SERVICE, T0, TEAM, type World, world } from './fixture.js';

const AT = '2026-01-12T08:30:00.000Z';
const listed = (w: World, kind: 'member' | 'booking_service' | 'team' | 'board', team = TEAM) =>
  w.store.listRecords({ team, kind, after: 0, limit: 100 }).then((rows) => rows.map((r) => JSON.parse(r.json)));

describeEachBackend('write side: teams, members, services, boards, conversations and bookings', (makeStore) => {
  let w: World;
  afterEach(async () => w?.store.close());

  it('team timezone: the business-hours zone when valid', async () => {
    w = await world(makeStore);
    await w.apply({ type: 'team.upsert', at: T0, team: TEAM, business_hours_timezone: 'America/Chicago' });
    expect(await w.record('team', TEAM)).toMatchObject({
      timezone: 'America/Chicago',
      default_country: 'DE',
      name: 'Sales',
    });
  });

  it("team timezone: an invalid business-hours zone falls back to the default country's zone", async () => {
    w = await world(makeStore);
    await w.apply({
      type: 'team.upsert',
      at: T0,
      team: TEAM,
      business_hours_timezone: 'Mars/Olympus',
      default_country: 'FR',
    });
    expect((await w.record('team', TEAM))?.timezone).toBe('Europe/Paris');
  });

  it('team timezone: the fixed European default when neither is set', async () => {
    w = await world(makeStore);
    await w.apply({ type: 'team.upsert', at: T0, team: 'team_New', name: null });
    expect(await w.record('team', 'team_New')).toMatchObject({
      timezone: 'Europe/Berlin',
      name: null,
      default_country: null,
    });
  });

  it('livemode on every record is the team livemode: example teams read false', async () => {
    w = await world(makeStore);
    await w.apply({ type: 'team.upsert', at: T0, team: 'team_Demo', livemode: false });
    await w.apply({ ...newLead('lead_1'), team: 'team_Demo' } as never);
    expect(await w.record('team', 'team_Demo')).toMatchObject({ livemode: false });
    expect(await w.record('lead', 'lead_1')).toMatchObject({ livemode: false });
    expect(await w.record('lead_response', 'lead_1')).toMatchObject({ livemode: false });
    await expect(w.crm.apply({ type: 'team.upsert', at: T0, team: 'team_Demo', livemode: true })).rejects.toThrow(
      /livemode/,
    );
  });

  it('a member who leaves drops out of the list while older records keep naming the id; members are not in the feed', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1', { assignees: ['mem_Amy'] }));
    await w.apply({ type: 'member.left', at: AT, member: 'mem_Amy' });
    expect((await listed(w, 'member')).map((m) => m.id).sort()).toEqual(MEMBERS.filter((m) => m !== 'mem_Amy').sort());
    expect((await w.record('lead', 'lead_1'))?.assignees).toEqual(['mem_Amy']);
    expect((await w.feed()).some((f) => (f.kind as string) === 'member')).toBe(false);
    await expect(
      w.crm.apply({ type: 'lead.assignees_set', at: AT, lead: 'lead_1', assignees: ['mem_Amy'] }),
    ).rejects.toThrow(/left/);
  });

  it('a deleted bookable service drops out of the list while its bookings keep naming its id', async () => {
    w = await world(makeStore);
    await w.apply({
      type: 'booking.created',
      at: T0,
      team: TEAM,
      booking: 'bkg_1',
      service: SERVICE,
      starts_at: '2026-02-01T10:00:00Z',
      ends_at: '2026-02-01T10:30:00Z',
    });
    expect(await listed(w, 'booking_service')).toEqual([
      { id: SERVICE, object: 'booking_service', livemode: true, team: TEAM, name: 'Visit', meeting_type: 'in_person' },
    ]);
    await w.apply({ type: 'service.deleted', at: AT, service: SERVICE });
    expect(await listed(w, 'booking_service')).toEqual([]);
    expect((await w.record('booking', 'bkg_1'))?.service).toBe(SERVICE);
  });

  it('boards carry their stages in pipeline order with 0-based positions and the appointment booked stage', async () => {
    w = await world(makeStore);
    const board = await w.record('board', BOARD);
    expect(board).toMatchObject({
      name: 'Sales',
      is_default: true,
      is_archived: false,
      appointment_booked_stage: 'stg_Call',
      version: 1,
    });
    expect(board?.stages.map((s: { id: string; position: number }) => [s.id, s.position])).toEqual([
      ['stg_New', 0],
      ['stg_Call', 1],
      ['stg_Won', 2],
    ]);
    expect(board?.stages[1]).toMatchObject({ mode: 'automated', is_final: false });
    await w.apply({ type: 'board.archived', at: AT, board: BOARD });
    expect(await w.record('board', BOARD)).toMatchObject({ is_archived: true, version: 2 });
    await expect(
      w.crm.apply({
        type: 'board.upsert',
        at: AT,
        team: TEAM,
        board: 'brd_2',
        name: 'x',
        stages: [{ stage: 'stg_New', name: 'x' }],
      }),
    ).rejects.toThrow(/already on board/);
  });

  it('conversation status and assignees: closed_at set on closing and null on reopening, assignees sorted', async () => {
    w = await world(makeStore);
    await w.apply({
      type: 'conversation.started',
      at: T0,
      team: TEAM,
      conversation: 'conv_1',
      channel: 'email',
      assignees: ['mem_Zed', 'mem_Amy'],
    });
    expect(await w.record('conversation', 'conv_1')).toMatchObject({
      status: 'open',
      assignees: ['mem_Amy', 'mem_Zed'],
      started_at: T0,
      created_at: T0,
      closed_at: null,
      lead: null,
      inbound_count: 0,
      outbound_count: 0,
    });
    await w.apply({ type: 'conversation.updated', at: AT, conversation: 'conv_1', status: 'closed' });
    expect((await w.record('conversation', 'conv_1'))?.closed_at).toBe(AT);
    await w.apply({ type: 'conversation.updated', at: AT, conversation: 'conv_1', status: 'open' });
    expect((await w.record('conversation', 'conv_1'))?.closed_at).toBeNull();
  });

  it('conversation counts and timestamps come from message metadata; failed messages are not counted', async () => {
    w = await world(makeStore);
    await w.apply({ type: 'conversation.started', at: T0, team: TEAM, conversation: 'conv_1', channel: 'whatsapp' });
    await w.apply(
      {
        type: 'message.recorded',
        at: '2026-01-12T08:00:00Z',
        message: 'm1',
        conversation: 'conv_1',
        direction: 'inbound',
      },
      {
        type: 'message.recorded',
        at: '2026-01-12T08:05:00Z',
        message: 'm2',
        conversation: 'conv_1',
        direction: 'outbound',
      },
      {
        type: 'message.recorded',
        at: '2026-01-12T08:09:00Z',
        message: 'm3',
        conversation: 'conv_1',
        direction: 'outbound',
        failed: true,
      },
    );
    expect(await w.record('conversation', 'conv_1')).toMatchObject({
      inbound_count: 1,
      outbound_count: 1,
      last_inbound_at: '2026-01-12T08:00:00.000Z',
      last_outbound_at: '2026-01-12T08:05:00.000Z',
      last_message_at: '2026-01-12T08:05:00.000Z',
    });
  });

  it('booking status: cancelled_at set when cancelled; bookings name a lead and a bookable service', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'), {
      type: 'booking.created',
      at: T0,
      team: TEAM,
      booking: 'bkg_1',
      lead: 'lead_1',
      service: SERVICE,
      starts_at: '2026-02-01T10:00:00Z',
      ends_at: '2026-02-01T10:30:00Z',
      assignees: ['mem_Bob', 'mem_Amy'],
    });
    expect(await w.record('booking', 'bkg_1')).toMatchObject({
      lead: 'lead_1',
      service: SERVICE,
      status: 'scheduled',
      starts_at: '2026-02-01T10:00:00.000Z',
      assignees: ['mem_Amy', 'mem_Bob'],
      cancelled_at: null,
    });
    await w.apply({ type: 'booking.updated', at: AT, booking: 'bkg_1', status: 'cancelled' });
    expect(await w.record('booking', 'bkg_1')).toMatchObject({ status: 'cancelled', cancelled_at: AT, version: 2 });
    await expect(
      w.crm.apply({ type: 'booking.updated', at: AT, booking: 'bkg_1', ends_at: '2026-01-01T00:00:00Z' }),
    ).rejects.toThrow(/ends before it starts/);
  });
});
