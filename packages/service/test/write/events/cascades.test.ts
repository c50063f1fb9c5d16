import { afterEach, expect, it } from 'vitest';
import type { CrmEvent } from '../../../src/write/events/events.js';
import { describeEachBackend } from '../../support/backends.js';
import { newLead, SERVICE, T0, TEAM, type World, world } from './fixture.js';

const AT = '2026-01-12T08:30:00.000Z';

/** A lead with a call, a conversation with a message, a booking, a submission, an activity and a merged duplicate. */
function family(lead: string, dup: string): CrmEvent[] {
  return [
    newLead(lead, { stage: 'stg_New' }),
    newLead(dup),
    { type: 'lead.merged', at: T0, kept: lead, duplicate: dup },
    {
      type: 'call.recorded',
      at: T0,
      team: TEAM,
      call: `call_${lead.slice(5)}`,
      line: 'pbx',
      lead,
      duration_seconds: 30,
    },
    { type: 'call.recorded', at: T0, team: TEAM, call: `call_D${dup.slice(5)}`, line: 'pbx', lead: dup },
    { type: 'conversation.started', at: T0, team: TEAM, conversation: `conv_${lead.slice(5)}`, lead, channel: 'sms' },
    {
      type: 'message.recorded',
      at: T0,
      message: `m_${lead}`,
      conversation: `conv_${lead.slice(5)}`,
      direction: 'inbound',
    },
    {
      type: 'booking.created',
      at: T0,
      team: TEAM,
      booking: `bkg_${lead.slice(5)}`,
      lead,
      service: SERVICE,
      starts_at: '2026-02-01T10:00:00Z',
      ends_at: '2026-02-01T11:00:00Z',
    },
    { type: 'submission.received', at: T0, submission: `s_${lead}`, lead, external_provider: 'meta' },
  ];
}

async function removals(w: World) {
  return (await w.feed()).filter((f) => f.removed).map((f) => [f.kind, f.id, f.removed]);
}

describeEachBackend('write side: erasure and deletion cascades', (makeStore) => {
  let w: World;
  afterEach(async () => w?.store.close());

  it('erasing a lead erases its calls, conversations and merged duplicates, each as its own removal', async () => {
    w = await world(makeStore);
    await w.crm.applyBatch(family('lead_1', 'lead_2'));
    const acts = (await w.activities('lead_1')).map((a) => a.id);
    await w.apply({ type: 'lead.erased', at: AT, lead: 'lead_1' });
    const removed = await removals(w);
    for (const item of [
      ['call', 'call_1', 'erased'],
      ['conversation', 'conv_1', 'erased'],
      ['lead', 'lead_2', 'erased'],
      ['call', 'call_D2', 'erased'],
      ['lead', 'lead_1', 'erased'],
      ['lead_attribution', 'lead_1', 'erased'],
      ['lead_response', 'lead_1', 'erased'],
      ...acts.map((id) => ['activity', id, 'erased']),
    ]) {
      expect(removed).toContainEqual(item);
    }
    expect(await w.record('lead', 'lead_1')).toBeUndefined();
    expect(await w.store.getEntity('message', 'm_lead_1')).toBeUndefined();
    expect(await w.store.getEntity('submission', 's_lead_1')).toBeUndefined();
  });

  it('erasing a lead redelivers its bookings with lead null', async () => {
    w = await world(makeStore);
    await w.crm.applyBatch(family('lead_1', 'lead_2'));
    await w.apply({ type: 'lead.erased', at: AT, lead: 'lead_1' });
    expect(await w.record('booking', 'bkg_1')).toMatchObject({ lead: null, version: 2 });
    expect((await w.feedOf('booking', 'bkg_1')).map((f) => f.version)).toEqual([1, 2]);
  });

  it('a removal purges the earlier feed entries of the record: personal data does not outlive it', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1', { name: 'Ana' }), { type: 'lead.updated', at: T0, lead: 'lead_1', name: 'Anna' });
    await w.apply({ type: 'lead.erased', at: AT, lead: 'lead_1' });
    const items = await w.feedOf('lead', 'lead_1');
    expect(items.map((f) => [f.version, f.removed, f.body])).toEqual([[3, 'erased', null]]);
    const stored = await w.store.getRecord('lead', 'lead_1');
    expect(stored).toMatchObject({ json: null, removed: 'erased', version: 3 });
  });

  it('deleting a lead redelivers its calls, conversations and bookings with lead null; attribution, response and activities are removed', async () => {
    w = await world(makeStore);
    await w.crm.applyBatch(family('lead_1', 'lead_2'));
    const acts = (await w.activities('lead_1')).map((a) => a.id);
    await w.apply({ type: 'lead.deleted', at: AT, lead: 'lead_1' });
    expect(await w.record('call', 'call_1')).toMatchObject({ lead: null, version: 2 });
    expect(await w.record('conversation', 'conv_1')).toMatchObject({ lead: null, version: 3, inbound_count: 1 });
    expect(await w.record('booking', 'bkg_1')).toMatchObject({ lead: null, version: 2 });
    const removed = await removals(w);
    expect(removed).toContainEqual(['lead', 'lead_1', 'deleted']);
    expect(removed).toContainEqual(['lead_attribution', 'lead_1', 'deleted']);
    expect(removed).toContainEqual(['lead_response', 'lead_1', 'deleted']);
    for (const id of acts) expect(removed).toContainEqual(['activity', id, 'deleted']);
    // The merged duplicate stays, no longer naming the removed lead.
    expect(await w.record('lead', 'lead_2')).toMatchObject({ merged_into: null });
    expect(removed.filter(([kind]) => kind === 'call' || kind === 'conversation')).toEqual([]);
  });

  it('erasing a call or a conversation is a removal with reason erased and updates the lead response facet', async () => {
    w = await world(makeStore);
    await w.crm.applyBatch(family('lead_1', 'lead_2'));
    expect((await w.record('lead_response', 'lead_1'))?.coverage).toMatchObject({ calls: 1, conversations: 1 });
    await w.apply(
      { type: 'call.erased', at: AT, call: 'call_1' },
      { type: 'conversation.deleted', at: AT, conversation: 'conv_1' },
    );
    expect(await removals(w)).toEqual([
      ['call', 'call_1', 'erased'],
      ['conversation', 'conv_1', 'deleted'],
    ]);
    expect(await w.record('lead_response', 'lead_1')).toMatchObject({
      coverage: { calls: 0, conversations: 0 },
      last_answered_call_at: null,
      last_inbound_at: null,
    });
  });

  it('deleting a booking is a removal with reason deleted', async () => {
    w = await world(makeStore);
    await w.crm.applyBatch(family('lead_1', 'lead_2'));
    await w.apply({ type: 'booking.deleted', at: AT, booking: 'bkg_1' });
    expect(await removals(w)).toEqual([['booking', 'bkg_1', 'deleted']]);
  });
});
