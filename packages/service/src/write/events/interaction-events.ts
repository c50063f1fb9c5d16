import { Type } from 'typebox';
import {
  BOOKING_STATUSES,
  CONVERSATION_CHANNELS,
  CONVERSATION_STATUSES,
  WHATSAPP_DELIVERY_STATUSES,
} from '../../schemas/enums.js';
import { Id, Nullable, StringEnum } from '../../schemas/helpers.js';
import {
  CALL_LINES,
  CallFields,
  Event,
  InternalId,
  MESSAGE_DIRECTIONS,
  MESSAGE_PURPOSES,
  Members,
  Opt,
  Time,
} from './event-fields.js';

/** The events of calls, conversations and their messages, and bookings. */
export const INTERACTION_EVENTS = {
  'call.recorded': Event(
    'call.recorded',
    { team: Id('team'), call: Id('call'), line: StringEnum(CALL_LINES), ...CallFields },
    'a call is recorded (live or finished)',
  ),
  'call.updated': Event(
    'call.updated',
    { call: Id('call'), ...CallFields },
    'a call changes (ends, is classified, is linked)',
  ),
  'call.erased': Event('call.erased', { call: Id('call') }, 'a call is erased'),
  'call.deleted': Event('call.deleted', { call: Id('call') }, 'a call leaves the API data'),
  'conversation.started': Event(
    'conversation.started',
    {
      team: Id('team'),
      conversation: Id('conversation'),
      lead: Opt(Nullable(Id('lead'))),
      channel: StringEnum(CONVERSATION_CHANNELS),
      status: Opt(StringEnum(CONVERSATION_STATUSES)),
      assignees: Opt(Members),
    },
    'a conversation starts',
  ),
  'conversation.updated': Event(
    'conversation.updated',
    {
      conversation: Id('conversation'),
      lead: Opt(Nullable(Id('lead'))),
      status: Opt(StringEnum(CONVERSATION_STATUSES)),
      assignees: Opt(Members),
    },
    'status, assignees or lead of a conversation change',
  ),
  'conversation.erased': Event('conversation.erased', { conversation: Id('conversation') }, 'a conversation is erased'),
  'conversation.deleted': Event(
    'conversation.deleted',
    { conversation: Id('conversation') },
    'a conversation leaves the API data',
  ),
  'message.recorded': Event(
    'message.recorded',
    {
      message: InternalId,
      conversation: Id('conversation'),
      direction: StringEnum(MESSAGE_DIRECTIONS),
      purpose: Opt(Nullable(StringEnum(MESSAGE_PURPOSES))),
      failed: Opt(Type.Boolean()),
      imported: Opt(Type.Boolean({ description: 'imported history (for example WhatsApp)' })),
      visitor_turn: Opt(Type.Boolean({ description: 'a web-chat visitor turn' })),
    },
    'a message is sent or received (metadata only)',
  ),
  'message.receipt': Event(
    'message.receipt',
    { message: InternalId, status: StringEnum(WHATSAPP_DELIVERY_STATUSES) },
    'a WhatsApp delivery receipt (failed also marks the message failed)',
  ),
  'message.erased': Event('message.erased', { message: InternalId }, 'a message is erased'),
  'booking.created': Event(
    'booking.created',
    {
      team: Id('team'),
      booking: Id('booking'),
      lead: Opt(Nullable(Id('lead'))),
      service: Id('booking_service'),
      status: Opt(StringEnum(BOOKING_STATUSES)),
      starts_at: Time(),
      ends_at: Time(),
      assignees: Opt(Members),
    },
    'a booking is made',
  ),
  'booking.updated': Event(
    'booking.updated',
    {
      booking: Id('booking'),
      status: Opt(StringEnum(BOOKING_STATUSES)),
      starts_at: Opt(Time()),
      ends_at: Opt(Time()),
      assignees: Opt(Members),
    },
    'a booking is rescheduled, reassigned, cancelled or completed',
  ),
  'booking.deleted': Event('booking.deleted', { booking: Id('booking') }, 'a booking leaves the API data'),
} as const;
