import { type Static, type TSchema, Type } from 'typebox';
import {
  ACTOR_KINDS,
  ARCHIVE_REASONS,
  BOOKING_STATUSES,
  CALL_DIRECTIONS,
  CALL_OUTCOMES,
  CONVERSATION_CHANNELS,
  CONVERSATION_STATUSES,
  LEAD_SOURCES,
  LEAD_STATUSES,
  OUTCOME_BASES,
  PHONE_STATUSES,
  PRIORITIES,
  RECORD_KINDS_OF_LEAD,
  type RecordKind,
  SCOPES,
  SOURCE_PROVENANCES,
  STATUS_ACTIVITY_TYPES,
  WHATSAPP_DELIVERY_STATUSES,
} from './enums.js';
import { DateTime, Id, Nullable, Record_, StringEnum } from './helpers.js';

// Kept whole on purpose: every exported record's shape in one file, in the API's order, so a reader sees
// the whole export side by side and RECORD_SCHEMAS below can name each one.
//
// Enumerated response fields are documented with the values that exist today but typed as open
// strings where the spec says new values can appear; the consumer keeps unknown values.

const livemode = Type.Boolean();
const version = Type.Integer({ minimum: 1 });

export const Integration = Record_(
  {
    object: Type.Literal('integration'),
    id: Id('integration'),
    livemode,
    name: Type.String(),
    key: Record_({ last4: Type.String({ minLength: 4, maxLength: 4 }) }),
    teams: Type.Array(Id('team')),
    scopes: Type.Array(StringEnum(SCOPES)),
  },
  { $id: 'Integration' },
);
export type Integration = Static<typeof Integration>;

export const Team = Record_(
  {
    id: Id('team'),
    object: Type.Literal('team'),
    livemode,
    name: Nullable(Type.String({ minLength: 1 })),
    timezone: Type.String({ minLength: 1, description: 'IANA zone' }),
    default_country: Nullable(Type.String({ pattern: '^[A-Z]{2}$' })),
  },
  { $id: 'Team' },
);
export type Team = Static<typeof Team>;

export const Member = Record_(
  {
    id: Id('member'),
    object: Type.Literal('member'),
    livemode,
    team: Id('team'),
    display_name: Nullable(Type.String()),
  },
  { $id: 'Member' },
);
export type Member = Static<typeof Member>;

export const Stage = Record_(
  {
    object: Type.Literal('stage'),
    id: Id('stage'),
    name: Type.String(),
    position: Type.Integer({ minimum: 0 }),
    is_default: Type.Boolean(),
    is_final: Type.Boolean(),
    is_archive: Type.Boolean(),
    mode: Type.String({ description: 'seen: automated, supervised, standard' }),
  },
  { $id: 'Stage' },
);
export type Stage = Static<typeof Stage>;

export const Board = Record_(
  {
    id: Id('board'),
    object: Type.Literal('board'),
    livemode,
    team: Id('team'),
    name: Type.String(),
    is_default: Type.Boolean(),
    is_archived: Type.Boolean(),
    appointment_booked_stage: Id('stage'),
    stages: Type.Array(Stage),
    version,
    updated_at: DateTime,
  },
  { $id: 'Board' },
);
export type Board = Static<typeof Board>;

export const BookingService = Record_(
  {
    id: Id('booking_service'),
    object: Type.Literal('booking_service'),
    livemode,
    team: Id('team'),
    name: Type.String(),
    meeting_type: Type.String({ description: 'seen: in_person' }),
  },
  { $id: 'BookingService' },
);
export type BookingService = Static<typeof BookingService>;

const Provenanced = Record_({ value: Nullable(Type.String()), provenance: Type.String() });
const IdName = Record_({ id: Provenanced, name: Provenanced });
const IdOnly = Record_({ id: Provenanced });
const OpenObject = Type.Object({}, { additionalProperties: true });

export const ContactPermissions = Record_({
  do_not_contact: Type.Boolean(),
  email_opt_out: Type.Boolean(),
  email_opt_out_at: Nullable(DateTime),
  whatsapp_consent: Nullable(Type.Boolean()),
  provenance: Record_({
    do_not_contact: Nullable(Type.String()),
    email_opt_out: Nullable(Type.String()),
    whatsapp_consent: Nullable(Type.String()),
  }),
});
export type ContactPermissions = Static<typeof ContactPermissions>;

export const TransferredTo = Record_({ team: Id('team'), lead: Nullable(Id('lead')) });

export const Lead = Record_(
  {
    id: Id('lead'),
    object: Type.Literal('lead'),
    livemode,
    team: Id('team'),
    record_kind: StringEnum(RECORD_KINDS_OF_LEAD),
    name: Nullable(Type.String()),
    surname: Nullable(Type.String()),
    email: Nullable(Type.String()),
    company: Nullable(Type.String()),
    phone: Nullable(Type.String({ pattern: '^\\+[1-9][0-9]{1,14}$' })),
    phone_status: StringEnum(PHONE_STATUSES),
    status: Nullable(StringEnum(LEAD_STATUSES)),
    status_set_by: Nullable(StringEnum(ACTOR_KINDS)),
    archive_reason: Nullable(StringEnum(ARCHIVE_REASONS)),
    archived_from_status: Nullable(StringEnum(LEAD_STATUSES)),
    contact_permissions: ContactPermissions,
    merged_into: Nullable(Id('lead')),
    transferred_to: Nullable(TransferredTo),
    revived_at: Nullable(DateTime),
    pipeline_cleared: Type.Boolean(),
    converted_at: Nullable(DateTime),
    value_at_conversion: Nullable(Type.Number()),
    priority: Nullable(StringEnum(PRIORITIES)),
    tags: Type.Array(Type.String()),
    board: Nullable(Id('board')),
    stage: Nullable(Id('stage')),
    assignees: Nullable(Type.Array(Id('member'))),
    estimated_value: Nullable(Type.Number()),
    estimated_value_currency: Type.Null(),
    source: Nullable(StringEnum(LEAD_SOURCES)),
    source_channel: Nullable(Type.String()),
    source_detail: Nullable(Type.String()),
    source_provenance: Nullable(StringEnum(SOURCE_PROVENANCES)),
    created_at: DateTime,
    version,
    updated_at: DateTime,
  },
  { $id: 'Lead' },
);
export type Lead = Static<typeof Lead>;

export const OriginalCapture = Record_({
  capture: Type.String({ description: 'seen: at_creation' }),
  captured_at: Nullable(DateTime),
  received_at: Nullable(DateTime),
  submitted_at: Nullable(DateTime),
  source: Nullable(Type.String()),
  source_hint: Nullable(Type.String()),
  source_channel: Nullable(Type.String()),
  external_provider: Nullable(Type.String()),
  origin: Nullable(Type.String()),
  campaign: IdName,
  ad: IdName,
  ad_set: IdName,
  form: IdName,
  page: IdName,
  ad_group: IdOnly,
  creative: IdOnly,
  asset_group: IdOnly,
  click_network: Provenanced,
  audience: Record_({ value: Nullable(Type.String()), missing_reason: Nullable(Type.String()) }),
  utm: Nullable(OpenObject),
  ad_referral: Nullable(OpenObject),
  family_origin: Nullable(OpenObject),
});
export type OriginalCapture = Static<typeof OriginalCapture>;

export const LeadAttribution = Record_(
  {
    id: Id('lead'),
    object: Type.Literal('lead_attribution'),
    livemode,
    team: Id('team'),
    original_capture: Nullable(OriginalCapture),
    original_capture_missing_reason: Nullable(Type.String({ description: 'not_captured' })),
    latest_submission: Nullable(OpenObject),
    latest_submission_missing_reason: Nullable(Type.String({ description: 'not_captured' })),
    version,
    updated_at: DateTime,
  },
  { $id: 'LeadAttribution' },
);
export type LeadAttribution = Static<typeof LeadAttribution>;

export const LeadResponse = Record_(
  {
    id: Id('lead'),
    object: Type.Literal('lead_response'),
    livemode,
    team: Id('team'),
    last_inbound_at: Nullable(DateTime),
    last_outbound_at: Nullable(DateTime),
    awaiting_reply: Type.Boolean(),
    last_answered_call_at: Nullable(DateTime),
    last_whatsapp_delivery_status: Nullable(StringEnum(WHATSAPP_DELIVERY_STATUSES)),
    coverage: Record_({
      conversations: Type.Integer({ minimum: 0 }),
      calls: Type.Integer({ minimum: 0 }),
      channels_without_delivery_data: Type.Array(Type.String()),
      truncated: Type.Boolean(),
    }),
    version,
    updated_at: DateTime,
  },
  { $id: 'LeadResponse' },
);
export type LeadResponse = Static<typeof LeadResponse>;

export const LeadDetail = Type.Object(
  {
    ...Lead.properties,
    attribution: Nullable(LeadAttribution),
    response: Nullable(LeadResponse),
  },
  { additionalProperties: false, $id: 'LeadDetail' },
);
export type LeadDetail = Static<typeof LeadDetail>;

const StageSnapshot = Record_({ stage: Id('stage'), board: Nullable(Id('board')), name: Type.String() });
const StagePlace = Record_({ stage: Id('stage'), board: Nullable(Id('board')) });

const activityCommon = {
  id: Id('activity'),
  object: Type.Literal('activity'),
  livemode,
  team: Id('team'),
  lead: Nullable(Id('lead')),
  occurred_at: DateTime,
  actor_kind: StringEnum(ACTOR_KINDS),
  stage_snapshot: Nullable(StageSnapshot),
  value_snapshot: Nullable(Type.Number()),
  version,
  updated_at: DateTime,
};

export const StatusActivity = Record_({
  ...activityCommon,
  type: StringEnum(STATUS_ACTIVITY_TYPES),
  from: Nullable(StringEnum(LEAD_STATUSES)),
  to: StringEnum(LEAD_STATUSES),
});
export const StageActivity = Record_({
  ...activityCommon,
  type: Type.Literal('stage_changed'),
  from: Nullable(StagePlace),
  to: StagePlace,
});
export const AssigneesActivity = Record_({
  ...activityCommon,
  type: Type.Literal('assignees_changed'),
  from: Type.Array(Id('member')),
  to: Type.Array(Id('member')),
});
export const Activity = Type.Union([StatusActivity, StageActivity, AssigneesActivity], { $id: 'Activity' });
export type Activity = Static<typeof Activity>;

export const Call = Record_(
  {
    id: Id('call'),
    object: Type.Literal('call'),
    livemode,
    team: Id('team'),
    lead: Nullable(Id('lead')),
    direction: Nullable(StringEnum(CALL_DIRECTIONS)),
    started_at: Nullable(DateTime),
    duration_seconds: Nullable(Type.Integer({ minimum: 0 })),
    outcome: StringEnum(CALL_OUTCOMES),
    outcome_basis: StringEnum(OUTCOME_BASES),
    version,
    updated_at: DateTime,
  },
  { $id: 'Call' },
);
export type Call = Static<typeof Call>;

export const Conversation = Record_(
  {
    id: Id('conversation'),
    object: Type.Literal('conversation'),
    livemode,
    team: Id('team'),
    lead: Nullable(Id('lead')),
    channel: StringEnum(CONVERSATION_CHANNELS),
    status: StringEnum(CONVERSATION_STATUSES),
    assignees: Type.Array(Id('member')),
    started_at: Nullable(DateTime),
    last_message_at: Nullable(DateTime),
    last_inbound_at: Nullable(DateTime),
    last_outbound_at: Nullable(DateTime),
    closed_at: Nullable(DateTime),
    inbound_count: Type.Integer({ minimum: 0 }),
    outbound_count: Type.Integer({ minimum: 0 }),
    created_at: DateTime,
    version,
    updated_at: DateTime,
  },
  { $id: 'Conversation' },
);
export type Conversation = Static<typeof Conversation>;

export const Booking = Record_(
  {
    id: Id('booking'),
    object: Type.Literal('booking'),
    livemode,
    team: Id('team'),
    lead: Nullable(Id('lead')),
    service: Id('booking_service'),
    status: StringEnum(BOOKING_STATUSES),
    starts_at: DateTime,
    ends_at: DateTime,
    assignees: Type.Array(Id('member')),
    cancelled_at: Nullable(DateTime),
    created_at: DateTime,
    version,
    updated_at: DateTime,
  },
  { $id: 'Booking' },
);
export type Booking = Static<typeof Booking>;

/** The schema of every kind the records table holds: the shape its stored JSON has. */
export const RECORD_SCHEMAS = {
  lead: Lead,
  lead_attribution: LeadAttribution,
  lead_response: LeadResponse,
  activity: Activity,
  call: Call,
  conversation: Conversation,
  booking: Booking,
  board: Board,
  team: Team,
  member: Member,
  booking_service: BookingService,
} as const satisfies Record<RecordKind, TSchema>;

/** The exported shape of a record kind, as its schema declares it: what a projection must build. */
export type RecordOf<K extends RecordKind> = { [Kind in RecordKind]: Static<(typeof RECORD_SCHEMAS)[Kind]> }[K];

export const Health = Record_({ object: Type.Literal('health'), status: Type.Literal('ok') }, { $id: 'Health' });
export type Health = Static<typeof Health>;
