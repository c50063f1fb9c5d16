import type { BookingStatus, ConversationStatus, WhatsappDeliveryStatus } from '../schemas/enums.js';
import type { CrmEvent, EventOf } from '../write/events/events.js';
import { variant } from './demo-contact.js';
import type { DemoRandom } from './demo-random.js';
import type { Story } from './demo-stories.js';
import type { TeamPlan } from './demo-team.js';
import type { Timeline } from './demo-timeline.js';

// Calls, conversations and bookings around one lead. The first leads of a team walk every variant
// (every call outcome and basis on every line type, every channel and message kind, every booking status).

type CallShape = Omit<EventOf<'call.recorded'>, 'type' | 'at' | 'team' | 'call' | 'lead' | 'started_at'>;

/** Comments give the outcome and basis the write side derives. */
const CALLS: readonly CallShape[] = [
  {
    line: 'own_line',
    direction: 'inbound',
    carrier_result: 'answered',
    verdict: 'answered_human',
    duration_seconds: 184,
  }, // answered_human, inbound_verdict
  { line: 'own_line', direction: 'inbound', carrier_result: 'answered', verdict: 'voicemail', duration_seconds: 31 }, // voicemail, inbound_verdict
  { line: 'own_line', direction: 'inbound', carrier_result: 'answered', duration_seconds: 75 }, // unknown, carrier_answer_only
  { line: 'own_line', direction: 'outbound', carrier_result: 'answered', duration_seconds: 240 }, // unknown, carrier_answer_only
  { line: 'own_line', direction: 'outbound', carrier_result: 'no_answer', duration_seconds: 0 }, // no_answer, carrier_answer_only
  { line: 'own_line', direction: 'outbound', carrier_result: 'busy', duration_seconds: 0 }, // busy, carrier_answer_only
  {
    line: 'voice_platform',
    direction: 'inbound',
    carrier_result: 'answered',
    verdict: 'answered_ai',
    duration_seconds: 122,
  }, // answered_ai, ai_analysis
  {
    line: 'voice_platform',
    direction: 'outbound',
    carrier_result: 'answered',
    verdict: 'voicemail',
    duration_seconds: 28,
  }, // voicemail, ai_analysis
  { line: 'pbx', direction: 'outbound', carrier_result: 'answered', duration_seconds: 95 }, // answered_human, duration_floor
  { line: 'pbx', direction: 'inbound', carrier_result: 'answered', duration_seconds: 6 }, // no_answer, duration_floor
  { line: 'pbx', direction: 'outbound', carrier_result: 'failed', duration_seconds: 0 }, // failed, duration_floor
  { line: 'browser_session', direction: 'outbound', carrier_result: 'answered', duration_seconds: 310 }, // answered_human, browser_session
  { line: 'voice_platform', direction: 'outbound', carrier_result: 'failed', verdict: 'failed' }, // failed, ai_analysis
  { line: 'own_line', direction: 'inbound', live: true }, // unknown, none (still live)
];
const CALL_WEIGHTS = [20, 6, 6, 14, 14, 4, 8, 4, 6, 3, 2, 6, 1, 0.5];

type Message = Omit<EventOf<'message.recorded'>, 'type' | 'at' | 'message' | 'conversation'> & {
  receipt?: WhatsappDeliveryStatus;
};
interface ConversationShape {
  channel: EventOf<'conversation.started'>['channel'];
  status: ConversationStatus;
  messages: Message[];
  /** Erase the first message afterwards (it no longer counts for the response facet). */
  eraseFirst?: boolean;
}

const CONVERSATIONS: readonly ConversationShape[] = [
  {
    channel: 'whatsapp',
    status: 'open',
    messages: [
      { direction: 'inbound' },
      { direction: 'outbound', purpose: 'reply', receipt: 'read' },
      { direction: 'inbound' },
    ],
  },
  {
    channel: 'whatsapp',
    status: 'closed',
    messages: [
      { direction: 'inbound', imported: true },
      { direction: 'outbound', imported: true },
      { direction: 'outbound', purpose: 'outreach', receipt: 'failed' },
    ],
  },
  {
    channel: 'sms',
    status: 'pending',
    messages: [{ direction: 'outbound', purpose: 'outreach' }, { direction: 'inbound' }],
  },
  {
    channel: 'email',
    status: 'closed',
    messages: [
      { direction: 'outbound', purpose: 'transactional' },
      { direction: 'outbound', purpose: 'reply', failed: true },
      { direction: 'inbound' },
      { direction: 'outbound', purpose: null },
    ],
  },
  {
    channel: 'widget',
    status: 'open',
    messages: [
      { direction: 'inbound', visitor_turn: true },
      { direction: 'inbound', visitor_turn: true },
      { direction: 'outbound', purpose: 'reply' },
    ],
  },
  { channel: 'instagram', status: 'open', messages: [{ direction: 'inbound' }] },
  {
    channel: 'messenger',
    status: 'closed',
    messages: [{ direction: 'inbound' }, { direction: 'outbound', purpose: 'reply' }],
  },
  {
    channel: 'whatsapp',
    status: 'pending',
    messages: [{ direction: 'inbound' }, { direction: 'outbound', purpose: 'reply', receipt: 'delivered' }],
    eraseFirst: true,
  },
  { channel: 'phone', status: 'closed', messages: [{ direction: 'outbound', purpose: 'outreach' }] },
];
const CONVERSATION_WEIGHTS = [30, 5, 10, 12, 12, 5, 5, 2, 3];

// Every booking status, in the order of their weights.
const BOOKING_ENDS = ['scheduled', 'completed', 'cancelled', 'no_show'] as const satisfies readonly BookingStatus[];
const BOOKING_WEIGHTS = [40, 35, 15, 10];

export interface InteractionInput {
  rng: DemoRandom;
  plan: TeamPlan;
  lead: string;
  index: number;
  time: Timeline;
  /** Members who may be assigned. */
  pool: readonly string[];
  story: Story;
}

export function interactions(input: InteractionInput): CrmEvent[] {
  const { rng, plan, lead, index, time, pool } = input;
  const events: CrmEvent[] = [];
  const calls =
    index < CALLS.length
      ? 1
      : rng.faker.helpers.weightedArrayElement([
          { value: 0, weight: 4 },
          { value: 1, weight: 4 },
          { value: 2, weight: 2 },
        ]);
  for (let i = 0; i < calls; i++) {
    const shape = variant(rng, CALLS, i === 0 ? index : CALLS.length, CALL_WEIGHTS);
    const at = time.after(rng.int(5, 4000));
    events.push({ type: 'call.recorded', at, team: plan.team, call: rng.id('call'), lead, started_at: at, ...shape });
  }

  const conversations = index < CONVERSATIONS.length || rng.chance(0.6) ? 1 : 0;
  for (let i = 0; i < conversations; i++) {
    const shape = variant(rng, CONVERSATIONS, index, CONVERSATION_WEIGHTS);
    const conversation = rng.id('conversation');
    events.push({
      type: 'conversation.started',
      at: time.after(rng.int(1, 600)),
      team: plan.team,
      conversation,
      lead,
      channel: shape.channel,
      status: 'open',
      assignees: rng.some(pool, 1, 2),
    });
    const ids: string[] = [];
    for (const { receipt, ...message } of shape.messages) {
      const id = rng.internalId('msg');
      ids.push(id);
      events.push({ type: 'message.recorded', at: time.after(rng.int(1, 300)), message: id, conversation, ...message });
      if (receipt) events.push({ type: 'message.receipt', at: time.after(1), message: id, status: receipt });
    }
    if (shape.eraseFirst && ids[0])
      events.push({ type: 'message.erased', at: time.after(rng.int(60, 600)), message: ids[0] });
    if (shape.status !== 'open') {
      events.push({
        type: 'conversation.updated',
        at: time.after(rng.int(10, 3000)),
        conversation,
        status: shape.status,
      });
    }
  }

  // A removed lead's bookings stay with `lead` null: every erased or deleted lead has one to show it.
  const removed = input.story === 'erased' || input.story === 'deleted';
  if (index < BOOKING_ENDS.length || removed || (input.story !== 'client' && rng.chance(0.25))) {
    const end = variant(rng, BOOKING_ENDS, index, BOOKING_WEIGHTS);
    const booking = rng.id('booking');
    // The service deleted at the end keeps being named by its bookings.
    const service = index === 1 || rng.chance(0.05) ? plan.deletedService : rng.pick(plan.services);
    const startsIn = end === 'scheduled' ? rng.int(1, 14) * 1440 : rng.int(1, 3) * 60;
    const starts = time.ahead(startsIn);
    events.push({
      type: 'booking.created',
      at: time.after(rng.int(1, 60)),
      team: plan.team,
      booking,
      lead,
      service,
      status: 'scheduled',
      starts_at: starts,
      ends_at: new Date(Date.parse(starts) + 45 * 60_000).toISOString(),
      assignees: rng.some(pool, 1, 1),
    });
    if (end !== 'scheduled')
      events.push({ type: 'booking.updated', at: time.after(startsIn + 50), booking, status: end });
  }
  return events;
}
