import { afterEach, expect, it } from 'vitest';
import { FEED_KINDS } from '../../src/schemas/enums.js';
import type { CrmEvent } from '../../src/write/events/events.js';
import { describeEachBackend } from '../support/backends.js';
import {
  type FeedWorld,
  feedWorld,
  keys,
  MEMBERS,
  newLead,
  OTHER_TEAM,
  SECOND,
  SERVICE,
  T0,
  TEAM,
} from './feed-world.js';

// "Which operation emits which item", read through the feed as a consumer sees it.

/** A lead with a merged duplicate, a call, a conversation with a message and a booking. */
function family(): CrmEvent[] {
  return [
    newLead('lead_1', { stage: 'stg_New', assignees: [MEMBERS[0]] }),
    newLead('lead_2'),
    { type: 'lead.merged', at: T0, kept: 'lead_1', duplicate: 'lead_2' },
    { type: 'call.recorded', at: T0, team: TEAM, call: 'call_1', line: 'pbx', lead: 'lead_1', duration_seconds: 30 },
    { type: 'conversation.started', at: T0, team: TEAM, conversation: 'conv_1', lead: 'lead_1', channel: 'sms' },
    { type: 'message.recorded', at: T0, message: 'm_1', conversation: 'conv_1', direction: 'inbound' },
    {
      type: 'booking.created',
      at: T0,
      team: TEAM,
      booking: 'bkg_1',
      lead: 'lead_1',
      service: SERVICE,
      starts_at: '2026-02-01T10:00:00Z',
      ends_at: '2026-02-01T11:00:00Z',
    },
  ];
}

describeEachBackend('changes feed: items', (makeStore) => {
  let w: FeedWorld;
  afterEach(async () => w?.store.close());

  /** Items delivered after the state the family was in; the clock moves past the hold-back. */
  async function changesOf(...events: CrmEvent[]) {
    w.clock.advance(10 * SECOND);
    const { cursor } = await w.readAll();
    for (const e of events) await w.crm.apply(e);
    w.clock.advance(10 * SECOND);
    return (await w.readAll({ cursor })).items;
  }

  it('erasing a lead also erases its calls, conversations and merged duplicates, each as its own removal', async () => {
    w = await feedWorld(makeStore);
    await w.crm.applyBatch(family());
    const items = await changesOf({ type: 'lead.erased', at: T0, lead: 'lead_1' });
    const removals = items.filter((i) => i.removed).map((i) => `${i.kind}:${i.id}:${i.removed?.reason}`);
    for (const k of ['lead:lead_1', 'lead:lead_2', 'call:call_1', 'conversation:conv_1']) {
      expect(removals).toContain(`${k}:erased`);
    }
    expect(removals).toContain('lead_attribution:lead_1:erased');
    expect(removals).toContain('lead_response:lead_1:erased');
    expect(removals.filter((r) => r.startsWith('activity:')).length).toBeGreaterThan(0);
    for (const i of items) expect(Object.hasOwn(i, 'object') !== Object.hasOwn(i, 'removed')).toBe(true);
  });

  it('its bookings are redelivered with lead null', async () => {
    w = await feedWorld(makeStore);
    await w.crm.applyBatch(family());
    const items = await changesOf({ type: 'lead.erased', at: T0, lead: 'lead_1' });
    const booking = items.find((i) => i.kind === 'booking' && i.id === 'bkg_1');
    expect(booking?.object?.lead).toBeNull();
    expect(booking?.version).toBe(2);
  });

  it('deleting a lead redelivers its calls, conversations and bookings with lead null and removes its facets and activities', async () => {
    w = await feedWorld(makeStore);
    await w.crm.applyBatch(family());
    const items = await changesOf({ type: 'lead.deleted', at: T0, lead: 'lead_1' });
    for (const [kind, id] of [
      ['call', 'call_1'],
      ['conversation', 'conv_1'],
      ['booking', 'bkg_1'],
    ]) {
      expect(items.find((i) => i.kind === kind && i.id === id)?.object?.lead).toBeNull();
    }
    const removals = items.filter((i) => i.removed).map((i) => `${i.kind}:${i.id}:${i.removed?.reason}`);
    expect(removals).toContain('lead:lead_1:deleted');
    expect(removals).toContain('lead_attribution:lead_1:deleted');
    expect(removals).toContain('lead_response:lead_1:deleted');
    expect(removals.some((r) => r.startsWith('activity:'))).toBe(true);
    // The merged duplicate stays, now merged into nothing.
    expect(items.find((i) => i.kind === 'lead' && i.id === 'lead_2')?.object?.merged_into).toBeNull();
  });

  it('merge and transfer redeliver the archived lead with merged_into or transferred_to set', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'), newLead('lead_2'), newLead('lead_3'));
    const items = await changesOf(
      { type: 'lead.merged', at: T0, kept: 'lead_1', duplicate: 'lead_2' },
      { type: 'lead.transferred', at: T0, lead: 'lead_3', to_team: OTHER_TEAM, new_lead: 'lead_9' },
    );
    const merged = items.find((i) => i.kind === 'lead' && i.id === 'lead_2')?.object;
    expect(merged).toMatchObject({ status: 'archived', archive_reason: 'merged', merged_into: 'lead_1' });
    const moved = items.find((i) => i.kind === 'lead' && i.id === 'lead_3')?.object;
    expect(moved).toMatchObject({
      archive_reason: 'family_transfer',
      transferred_to: { team: OTHER_TEAM, lead: 'lead_9' },
    });
    // The new lead appears in the destination team's feed, not in this one.
    expect(keys(items)).not.toContain('lead:lead_9');
    w.clock.advance(10 * SECOND);
    expect(keys((await w.readAll({ team: OTHER_TEAM })).items)).toContain('lead:lead_9');
  });

  it('conversion with clearing redelivers the lead with pipeline data null', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1', { stage: 'stg_Call', assignees: [MEMBERS[1]], estimated_value: 500 }));
    const items = await changesOf({ type: 'lead.converted', at: T0, lead: 'lead_1', clear_pipeline: true });
    const lead = items.find((i) => i.kind === 'lead' && i.id === 'lead_1')?.object;
    expect(lead).toMatchObject({
      status: 'converted',
      pipeline_cleared: true,
      board: null,
      stage: null,
      assignees: null,
    });
    expect(lead?.value_at_conversion).toBe(500);
  });

  it('members and bookable services are not in the feed', async () => {
    w = await feedWorld(makeStore);
    await w.apply(
      { type: 'member.joined', at: T0, team: TEAM, member: 'mem_New' },
      { type: 'service.created', at: T0, team: TEAM, service: 'svc_New', name: 'Call' },
      { type: 'member.left', at: T0, member: 'mem_New' },
      { type: 'service.deleted', at: T0, service: 'svc_New' },
      newLead('lead_1'),
      { type: 'call.recorded', at: T0, team: TEAM, call: 'call_1', line: 'own_line', lead: 'lead_1' },
    );
    w.clock.advance(10 * SECOND);
    const { items } = await w.readAll();
    const kinds = new Set(items.map((i) => i.kind));
    for (const kind of kinds) expect(FEED_KINDS).toContain(kind);
    expect(items.some((i) => i.id.startsWith('mem_') || i.id.startsWith('svc_') || i.id.startsWith('team_'))).toBe(
      false,
    );
    expect([...kinds].sort()).toEqual(['activity', 'board', 'call', 'lead', 'lead_attribution', 'lead_response']);
  });

  it('a lead and its facets share an id', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'));
    w.clock.advance(10 * SECOND);
    const { items } = await w.readAll();
    const ofLead = items.filter((i) => i.id === 'lead_1').map((i) => [i.kind, i.object?.object, i.object?.id]);
    expect(ofLead).toEqual([
      ['lead', 'lead', 'lead_1'],
      ['lead_attribution', 'lead_attribution', 'lead_1'],
      ['lead_response', 'lead_response', 'lead_1'],
    ]);
  });

  it("a new message changes a lead's response facet without changing the lead", async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'), {
      type: 'conversation.started',
      at: T0,
      team: TEAM,
      conversation: 'conv_1',
      lead: 'lead_1',
      channel: 'whatsapp',
    });
    const items = await changesOf({
      type: 'message.recorded',
      at: '2026-01-12T08:00:00.000Z',
      message: 'm_1',
      conversation: 'conv_1',
      direction: 'inbound',
    });
    expect(keys(items).sort()).toEqual(['conversation:conv_1', 'lead_response:lead_1']);
  });

  it('an item is the record as it is now, the same object the list endpoints return', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'), { type: 'lead.updated', at: T0, lead: 'lead_1', company: 'Acme' });
    w.clock.advance(10 * SECOND);
    const { items } = await w.readAll();
    const item = items.filter((i) => i.kind === 'lead' && i.id === 'lead_1').at(-1);
    const stored = await w.store.getRecord('lead', 'lead_1');
    expect(JSON.stringify(item?.object)).toBe(stored?.json);
    expect(item?.version).toBe(stored?.version);
  });
});
