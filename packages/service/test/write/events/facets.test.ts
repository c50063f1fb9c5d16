import { afterEach, expect, it } from 'vitest';
import type { CrmEvent } from '../../../src/write/events/events.js';
import { describeEachBackend } from '../../support/backends.js';
import { newLead, T0, TEAM, type World, world } from './fixture.js';

const t = (minute: number) => `2026-01-12T08:${String(minute).padStart(2, '0')}:00.000Z`;
type Msg = Omit<Extract<CrmEvent, { type: 'message.recorded' }>, 'type' | 'message' | 'at'>;
let n = 0;
const msg = (minute: number, m: Msg): CrmEvent => ({
  type: 'message.recorded',
  at: t(minute),
  message: `m${++n}`,
  ...m,
});
const conv = (id: string, channel: 'whatsapp' | 'widget' | 'email' | 'sms'): CrmEvent => ({
  type: 'conversation.started',
  at: T0,
  team: TEAM,
  conversation: id,
  lead: 'lead_1',
  channel,
});

describeEachBackend('write side: attribution and response facets', (makeStore) => {
  let w: World;
  afterEach(async () => w?.store.close());

  it('original capture is frozen once at creation; without one the missing reason is not_captured', async () => {
    w = await world(makeStore);
    await w.apply(
      newLead('lead_1', {
        source: 'platform_lead_ads',
        capture: {
          external_provider: 'meta',
          submitted_at: '2026-01-10T09:59:00Z',
          campaign: { id: 'c1', name: 'Spring' },
          utm: { utm_source: 'fb' },
        },
      }),
      newLead('lead_2'),
    );
    const a = await w.record('lead_attribution', 'lead_1');
    expect(a?.original_capture).toMatchObject({
      capture: 'at_creation',
      captured_at: T0,
      submitted_at: '2026-01-10T09:59:00.000Z',
      external_provider: 'meta',
      campaign: { id: { value: 'c1', provenance: 'provider' }, name: { value: 'Spring', provenance: 'provider' } },
      ad: { id: { value: null, provenance: 'not_captured' } },
      utm: { utm_source: 'fb' },
    });
    expect(a?.original_capture_missing_reason).toBeNull();
    expect(await w.record('lead', 'lead_1')).toMatchObject({
      source: 'platform_lead_ads',
      source_provenance: 'server_written',
    });
    await w.apply({ type: 'lead.updated', at: T0, lead: 'lead_1', source: 'manual' });
    expect((await w.record('lead_attribution', 'lead_1'))?.original_capture).toEqual(a?.original_capture);
    expect(await w.record('lead_attribution', 'lead_2')).toMatchObject({
      original_capture: null,
      original_capture_missing_reason: 'not_captured',
      latest_submission: null,
      latest_submission_missing_reason: 'not_captured',
    });
  });

  it('latest_submission is the newest submission; a deleted submission uncovers the older one', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'));
    await w.apply({ type: 'submission.received', at: t(1), submission: 's1', lead: 'lead_1', form: { id: 'f1' } });
    await w.apply({ type: 'submission.received', at: t(2), submission: 's2', lead: 'lead_1', form: { id: 'f2' } });
    expect((await w.record('lead_attribution', 'lead_1'))?.latest_submission).toMatchObject({ form: { id: 'f2' } });
    await w.apply({ type: 'submission.deleted', at: t(3), submission: 's2' });
    const a = await w.record('lead_attribution', 'lead_1');
    expect(a).toMatchObject({ latest_submission: { form: { id: 'f1' }, received_at: t(1) }, version: 4 });
    await w.apply({ type: 'submission.deleted', at: t(3), submission: 's1' });
    expect(await w.record('lead_attribution', 'lead_1')).toMatchObject({
      latest_submission: null,
      latest_submission_missing_reason: 'not_captured',
    });
  });

  it('a new message changes the response facet and never the lead', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'), conv('conv_1', 'sms'));
    const lead = await w.version('lead', 'lead_1');
    await w.apply(msg(5, { conversation: 'conv_1', direction: 'inbound' }));
    expect(await w.version('lead', 'lead_1')).toBe(lead);
    expect(await w.record('lead_response', 'lead_1')).toMatchObject({ last_inbound_at: t(5), awaiting_reply: true });
    expect(await w.record('conversation', 'conv_1')).toMatchObject({ inbound_count: 1, last_message_at: t(5) });
  });

  it('last_inbound_at excludes erased messages, imported WhatsApp history and web-chat visitor turns', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'), conv('conv_w', 'whatsapp'), conv('conv_c', 'widget'), conv('conv_s', 'sms'));
    await w.apply(
      msg(1, { conversation: 'conv_s', direction: 'inbound' }),
      msg(2, { conversation: 'conv_w', direction: 'inbound', imported: true }),
      msg(3, { conversation: 'conv_c', direction: 'inbound', visitor_turn: true }),
    );
    expect((await w.record('lead_response', 'lead_1'))?.last_inbound_at).toBe(t(1));
    await w.apply(msg(4, { conversation: 'conv_s', direction: 'inbound' }));
    expect((await w.record('lead_response', 'lead_1'))?.last_inbound_at).toBe(t(4));
    await w.apply({ type: 'message.erased', at: t(5), message: `m${n}` });
    expect((await w.record('lead_response', 'lead_1'))?.last_inbound_at).toBe(t(1));
  });

  it('last_outbound_at is the latest non-failed sent message; imported history counts', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'), conv('conv_w', 'whatsapp'));
    await w.apply(
      msg(1, { conversation: 'conv_w', direction: 'outbound', imported: true }),
      msg(2, { conversation: 'conv_w', direction: 'outbound', failed: true }),
    );
    expect((await w.record('lead_response', 'lead_1'))?.last_outbound_at).toBe(t(1));
  });

  it('awaiting_reply: true while the customer wrote after the latest reply; outreach, transactional and imported do not count', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'), conv('conv_s', 'sms'));
    expect((await w.record('lead_response', 'lead_1'))?.awaiting_reply).toBe(false);
    await w.apply(msg(1, { conversation: 'conv_s', direction: 'inbound' }));
    await w.apply(
      msg(2, { conversation: 'conv_s', direction: 'outbound', purpose: 'outreach' }),
      msg(3, { conversation: 'conv_s', direction: 'outbound', purpose: 'transactional' }),
      msg(4, { conversation: 'conv_s', direction: 'outbound', imported: true }),
      msg(5, { conversation: 'conv_s', direction: 'outbound', purpose: 'reply', failed: true }),
    );
    expect((await w.record('lead_response', 'lead_1'))?.awaiting_reply).toBe(true);
    await w.apply(msg(6, { conversation: 'conv_s', direction: 'outbound' }));
    expect((await w.record('lead_response', 'lead_1'))?.awaiting_reply).toBe(false);
    await w.apply(msg(7, { conversation: 'conv_s', direction: 'inbound' }));
    expect((await w.record('lead_response', 'lead_1'))?.awaiting_reply).toBe(true);
    await w.apply(msg(8, { conversation: 'conv_s', direction: 'outbound', purpose: 'reply' }));
    expect((await w.record('lead_response', 'lead_1'))?.awaiting_reply).toBe(false);
  });

  it('last_whatsapp_delivery_status follows the receipt of the latest WhatsApp message; null without receipt', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'), conv('conv_w', 'whatsapp'));
    await w.apply(msg(1, { conversation: 'conv_w', direction: 'outbound' }));
    const first = `m${n}`;
    await w.apply({ type: 'message.receipt', at: t(2), message: first, status: 'read' });
    expect((await w.record('lead_response', 'lead_1'))?.last_whatsapp_delivery_status).toBe('read');
    await w.apply(msg(3, { conversation: 'conv_w', direction: 'outbound' }));
    expect((await w.record('lead_response', 'lead_1'))?.last_whatsapp_delivery_status).toBeNull();
    await w.apply({ type: 'message.receipt', at: t(4), message: `m${n}`, status: 'failed' });
    expect(await w.record('lead_response', 'lead_1')).toMatchObject({
      last_whatsapp_delivery_status: 'failed',
      last_outbound_at: t(1),
    });
  });

  it('last_answered_call_at is the start of the latest call answered by a human or AI', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'));
    const call = (id: string, minute: number, extra: object): CrmEvent =>
      ({
        type: 'call.recorded',
        at: t(minute),
        team: TEAM,
        call: id,
        lead: 'lead_1',
        started_at: t(minute),
        ...extra,
      }) as CrmEvent;
    await w.apply(
      call('call_1', 1, { line: 'voice_platform', verdict: 'answered_ai' }),
      call('call_2', 2, { line: 'pbx', duration_seconds: 4 }),
      call('call_3', 3, { line: 'own_line', direction: 'outbound', carrier_result: 'answered' }),
    );
    expect(await w.record('lead_response', 'lead_1')).toMatchObject({
      last_answered_call_at: t(1),
      coverage: { calls: 3 },
    });
  });

  it('coverage counts conversations and calls and lists channels without delivery data', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'), conv('conv_w', 'whatsapp'), conv('conv_e', 'email'), conv('conv_c', 'widget'));
    expect((await w.record('lead_response', 'lead_1'))?.coverage).toEqual({
      conversations: 3,
      calls: 0,
      channels_without_delivery_data: ['email', 'widget'],
      truncated: false,
    });
  });

  it('coverage.truncated is true when the lead has more messages than the facet reads', async () => {
    w = await world(makeStore, { responseMessageWindow: 2 });
    await w.apply(newLead('lead_1'), conv('conv_s', 'sms'));
    await w.apply(
      msg(1, { conversation: 'conv_s', direction: 'inbound' }),
      msg(2, { conversation: 'conv_s', direction: 'inbound' }),
    );
    expect((await w.record('lead_response', 'lead_1'))?.coverage.truncated).toBe(false);
    await w.apply(msg(3, { conversation: 'conv_s', direction: 'inbound' }));
    expect(await w.record('lead_response', 'lead_1')).toMatchObject({
      coverage: { truncated: true },
      last_inbound_at: t(3),
    });
  });
});
