import { type Static, type TSchema, Type } from 'typebox';
import { Compile } from 'typebox/compile';
import {
  ACTOR_KINDS,
  BOOKING_STATUSES,
  CALL_DIRECTIONS,
  CLASSIFIED_CALL_OUTCOMES,
  CONVERSATION_CHANNELS,
  CONVERSATION_STATUSES,
  LEAD_SOURCES,
  LEAD_STATUSES,
  ORGANIZATION_PLANS,
  PRIORITIES,
  SOURCE_PROVENANCES,
  TEAM_STATES,
  WHATSAPP_DELIVERY_STATUSES,
} from '../../schemas/enums.js';
import { Id, Nullable, StringEnum } from '../../schemas/helpers.js';
import { DATE_TIME_PATTERN, normaliseDateTime } from './date-time.js';
import { describeIssue, type EventIssue, NOT_BLANK_PATTERN, type ValidationIssue } from './event-issue.js';

// The vocabulary of the write side: every CRM operation is one event. The TypeScript API, the NDJSON
// ingest and the demo generator all build these and hand them to `Crm.apply`. Events may carry
// content (message text, notes, transcripts, form answers) because real CRM events do: the schema
// accepts the fields listed in CONTENT_FIELDS and the write side drops them without storing them.

/** Kinds of phone line a call can run on; each has its own outcome rule. */
export const CALL_LINES = ['own_line', 'voice_platform', 'pbx', 'browser_session'] as const;
export type CallLine = (typeof CALL_LINES)[number];

/** What the carrier reported about a call (not who answered). */
export const CARRIER_RESULTS = ['answered', 'no_answer', 'busy', 'failed'] as const;
export type CarrierResult = (typeof CARRIER_RESULTS)[number];

export const MESSAGE_DIRECTIONS = ['inbound', 'outbound'] as const;
/** Why an outbound message was sent; null is a message recorded without purpose. */
export const MESSAGE_PURPOSES = ['reply', 'outreach', 'transactional'] as const;

/** Fields an event may carry that are never stored (content). */
export const CONTENT_FIELDS = [
  'text',
  'note',
  'notes',
  'transcript',
  'summary',
  'recording_url',
  'answers',
  'custom_fields',
  'free_text',
  'subject',
  'attachments',
] as const;
const content = Object.fromEntries(
  CONTENT_FIELDS.map((f) => [f, Type.Optional(Type.Unknown({ description: 'content: accepted and never stored' }))]),
) as Record<(typeof CONTENT_FIELDS)[number], ReturnType<typeof Type.Optional<ReturnType<typeof Type.Unknown>>>>;

/** An ISO 8601 date-time with a UTC offset (see date-time.ts); stored in UTC with milliseconds. */
const Time = (description = 'ISO 8601 date-time with a UTC offset (Z, +hh:mm, +hhmm or +hh); seconds optional') =>
  Type.String({ pattern: DATE_TIME_PATTERN, description });
/** When the business event happened. */
const At = Time('when the business event happened: ISO 8601 date-time with a UTC offset; seconds optional');
const Opt = <T extends TSchema>(s: T) => Type.Optional(s);
const NullableTime = Nullable(Time());
/** A string that must hold a value: empty or whitespace only is refused (an optional text field takes null). */
const Text = (description?: string) =>
  Type.String({ pattern: NOT_BLANK_PATTERN, ...(description ? { description } : {}) });
/** Ids with no public prefix (organizations, submissions, messages). */
const InternalId = Type.String({ pattern: '^[0-9A-Za-z_-]{1,64}$' });
const Actor = StringEnum(ACTOR_KINDS);
const Members = Type.Array(Id('member'));

function Event<T extends string, P extends Record<string, TSchema>>(type: T, props: P, description: string) {
  return Type.Object(
    { type: Type.Literal(type), at: At, ...props, ...content },
    { additionalProperties: false, description },
  );
}

const IdName = Type.Object(
  { id: Opt(Nullable(Type.String())), name: Opt(Nullable(Type.String())) },
  { additionalProperties: false },
);
const IdOnly = Type.Object({ id: Opt(Nullable(Type.String())) }, { additionalProperties: false });
const StringMap = Type.Record(Type.String(), Type.String());

/** How the ad platform or form reported the lead when it first entered the CRM. */
export const CaptureInput = Type.Object(
  {
    received_at: Opt(NullableTime),
    submitted_at: Opt(NullableTime),
    source: Opt(Nullable(Type.String())),
    source_hint: Opt(Nullable(Type.String())),
    source_channel: Opt(Nullable(Type.String())),
    external_provider: Opt(Nullable(Type.String())),
    origin: Opt(Nullable(Type.String())),
    campaign: Opt(IdName),
    ad: Opt(IdName),
    ad_set: Opt(IdName),
    form: Opt(IdName),
    page: Opt(IdName),
    ad_group: Opt(IdOnly),
    creative: Opt(IdOnly),
    asset_group: Opt(IdOnly),
    click_network: Opt(Nullable(Type.String())),
    audience: Opt(Nullable(Type.String())),
    utm: Opt(Nullable(StringMap)),
    ad_referral: Opt(Nullable(StringMap)),
  },
  { additionalProperties: false },
);
export type CaptureInput = Static<typeof CaptureInput>;

const PermissionsInput = {
  do_not_contact: Opt(Type.Boolean()),
  email_opt_out: Opt(Type.Boolean()),
  whatsapp_consent: Opt(Nullable(Type.Boolean())),
};

/** Exported lead fields a `lead.updated` may change (omitted = unchanged). */
const LeadFields = {
  name: Opt(Nullable(Type.String())),
  surname: Opt(Nullable(Type.String())),
  email: Opt(Nullable(Type.String())),
  company: Opt(Nullable(Type.String())),
  phone: Opt(Nullable(Type.String({ description: 'raw number; normalised to E.164 without a default country' }))),
  priority: Opt(Nullable(StringEnum(PRIORITIES))),
  tags: Opt(Type.Array(Text())),
  estimated_value: Opt(Nullable(Type.Number())),
  source: Opt(Nullable(StringEnum(LEAD_SOURCES))),
  source_channel: Opt(Nullable(Type.String())),
  source_detail: Opt(Nullable(Type.String())),
  source_provenance: Opt(Nullable(StringEnum(SOURCE_PROVENANCES))),
};

const StageInput = Type.Object(
  {
    stage: Id('stage'),
    name: Text(),
    is_default: Opt(Type.Boolean()),
    is_final: Opt(Type.Boolean()),
    is_archive: Opt(Type.Boolean()),
    mode: Opt(Text()),
  },
  { additionalProperties: false },
);

const CallFields = {
  lead: Opt(Nullable(Id('lead'))),
  direction: Opt(Nullable(StringEnum(CALL_DIRECTIONS))),
  started_at: Opt(NullableTime),
  duration_seconds: Opt(Nullable(Type.Number({ minimum: 0 }))),
  live: Opt(Type.Boolean()),
  carrier_result: Opt(Nullable(StringEnum(CARRIER_RESULTS))),
  verdict: Opt(Nullable(StringEnum(CLASSIFIED_CALL_OUTCOMES))),
};

export const EVENT_SCHEMAS = {
  'organization.upsert': Event(
    'organization.upsert',
    {
      organization: InternalId,
      name: Text(),
      plan: StringEnum(ORGANIZATION_PLANS),
      api_agreed: Opt(Type.Boolean()),
    },
    'creates or changes an organization',
  ),
  'team.upsert': Event(
    'team.upsert',
    {
      team: Id('team'),
      organization: Opt(Nullable(InternalId)),
      name: Opt(Nullable(Type.String({ minLength: 1 }))),
      business_hours_timezone: Opt(Nullable(Type.String())),
      default_country: Opt(Nullable(Type.String({ pattern: '^[A-Z]{2}$' }))),
      livemode: Opt(Type.Boolean()),
      state: Opt(StringEnum(TEAM_STATES)),
      legal_setup_done: Opt(Type.Boolean()),
      sensitive_sector: Opt(Type.Boolean()),
      captured_at: Opt(NullableTime),
    },
    'creates or changes a team (omitted fields keep their value)',
  ),
  'member.joined': Event(
    'member.joined',
    { team: Id('team'), member: Id('member'), display_name: Opt(Nullable(Type.String())) },
    'a member joins a team',
  ),
  'member.left': Event('member.left', { member: Id('member') }, 'a member leaves the team'),
  'service.created': Event(
    'service.created',
    { team: Id('team'), service: Id('booking_service'), name: Text(), meeting_type: Opt(Text()) },
    'a bookable service is created',
  ),
  'service.deleted': Event('service.deleted', { service: Id('booking_service') }, 'a bookable service is deleted'),
  'board.upsert': Event(
    'board.upsert',
    {
      team: Id('team'),
      board: Id('board'),
      name: Text(),
      is_default: Opt(Type.Boolean()),
      appointment_booked_stage: Opt(
        Nullable(Id('stage', 'where booked appointments land; null or omitted: see docs/write-side.md')),
      ),
      stages: Type.Array(StageInput, { minItems: 1, description: 'in pipeline order; a board has at least one stage' }),
    },
    'creates a board or replaces its name and stages',
  ),
  'board.archived': Event('board.archived', { board: Id('board') }, 'a board is archived'),
  'lead.created': Event(
    'lead.created',
    {
      team: Id('team'),
      lead: Id('lead'),
      status: Opt(Nullable(StringEnum(LEAD_STATUSES, 'null creates a client record'))),
      actor: Opt(Actor),
      ...LeadFields,
      stage: Opt(Nullable(Id('stage'))),
      board: Opt(Nullable(Id('board'))),
      assignees: Opt(Members),
      ...PermissionsInput,
      capture: Opt(Nullable(CaptureInput)),
    },
    'a lead or client is created (status null makes a client)',
  ),
  'lead.updated': Event('lead.updated', { lead: Id('lead'), ...LeadFields }, 'exported fields of a lead change'),
  'lead.internal_updated': Event(
    'lead.internal_updated',
    {
      lead: Id('lead'),
      score: Opt(Nullable(Type.Number())),
      language: Opt(Nullable(Type.String())),
      last_viewed_at: Opt(NullableTime),
    },
    'fields that are not exported change: no version, no feed item',
  ),
  'lead.contact_permissions': Event(
    'lead.contact_permissions',
    { lead: Id('lead'), ...PermissionsInput },
    'contact permissions change',
  ),
  'lead.status_set': Event(
    'lead.status_set',
    { lead: Id('lead'), status: StringEnum(LEAD_STATUSES), actor: Actor },
    'the pipeline status changes (archive, unarchive and conversion have their own events)',
  ),
  'lead.archived': Event(
    'lead.archived',
    {
      lead: Id('lead'),
      reason: Text('a reason value; free text reads other'),
      actor: Opt(Actor),
    },
    'the lead is archived',
  ),
  'lead.unarchived': Event(
    'lead.unarchived',
    { lead: Id('lead'), status: Opt(StringEnum(LEAD_STATUSES)), actor: Opt(Actor) },
    'an archived lead is reopened by the team',
  ),
  'lead.revived': Event(
    'lead.revived',
    { lead: Id('lead'), status: Opt(StringEnum(LEAD_STATUSES)), actor: Opt(Actor) },
    'the contact comes back on their own and reopens an archived lead',
  ),
  'lead.stage_moved': Event(
    'lead.stage_moved',
    { lead: Id('lead'), stage: Id('stage'), actor: Opt(Actor) },
    'the lead moves to a stage (without actor: a change made on its own)',
  ),
  'lead.assignees_set': Event(
    'lead.assignees_set',
    { lead: Id('lead'), assignees: Members, actor: Opt(Actor) },
    'the assignees of a lead change (without actor: a change made on its own)',
  ),
  'lead.converted': Event(
    'lead.converted',
    {
      lead: Id('lead'),
      clear_pipeline: Type.Boolean(),
      value: Opt(Nullable(Type.Number({ description: 'value at conversion; default the estimated value' }))),
      actor: Opt(Actor),
    },
    'the lead is converted, optionally clearing pipeline data',
  ),
  'lead.merged': Event(
    'lead.merged',
    { kept: Id('lead'), duplicate: Id('lead'), actor: Opt(Actor) },
    'two leads of one person are merged; the duplicate is archived',
  ),
  'lead.transferred': Event(
    'lead.transferred',
    { lead: Id('lead'), to_team: Id('team'), new_lead: Nullable(Id('lead')), actor: Opt(Actor) },
    'the lead moves to another team of the organization (new_lead: its id there, null when it cannot be named)',
  ),
  'lead.erased': Event(
    'lead.erased',
    { lead: Id('lead') },
    "the person's data is erased (or the lead permanently deleted)",
  ),
  'lead.deleted': Event('lead.deleted', { lead: Id('lead') }, 'the lead leaves the API data'),
  'submission.received': Event(
    'submission.received',
    {
      submission: InternalId,
      lead: Id('lead'),
      submitted_at: Opt(NullableTime),
      external_provider: Opt(Nullable(Type.String())),
      campaign: Opt(IdName),
      ad: Opt(IdName),
      ad_set: Opt(IdName),
      form: Opt(IdName),
    },
    'an ad submission arrives for a lead (also a repeat on an existing contact)',
  ),
  'submission.deleted': Event(
    'submission.deleted',
    { submission: InternalId },
    'the ad platform reports a submission deleted',
  ),
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

export type EventType = keyof typeof EVENT_SCHEMAS;
export const EVENT_TYPES = Object.keys(EVENT_SCHEMAS) as EventType[];

/** One CRM operation; `type` tells which. */
export const CrmEvent = Type.Union(Object.values(EVENT_SCHEMAS), { $id: 'CrmEvent' }) as unknown as TSchema & {
  static: { [K in EventType]: Static<(typeof EVENT_SCHEMAS)[K]> }[EventType];
};
export type CrmEvent = { [K in EventType]: Static<(typeof EVENT_SCHEMAS)[K]> }[EventType];
export type EventOf<K extends EventType> = Extract<CrmEvent, { type: K }>;

const validators = new Map(Object.entries(EVENT_SCHEMAS).map(([type, schema]) => [type, Compile(schema)]));

export type ParseResult = { ok: true; event: CrmEvent } | { ok: false; message: string };
export type EventCheck = { ok: true; event: CrmEvent } | ({ ok: false } & EventIssue);

type SchemaNode = { type?: unknown; pattern?: string; enum?: unknown; properties?: Record<string, unknown> };

/** Paths of the fields of a schema that `is` picks (through objects; no such field sits in an array). */
function fieldPaths(schema: unknown, is: (s: SchemaNode) => boolean, path: string[] = []): string[][] {
  const s = schema as SchemaNode;
  if (is(s)) return [path];
  return Object.entries(s.properties ?? {}).flatMap(([key, value]) => fieldPaths(value, is, [...path, key]));
}
const pathsOf = (is: (s: SchemaNode) => boolean) =>
  new Map(Object.entries(EVENT_SCHEMAS).map(([type, schema]) => [type, fieldPaths(schema, is)]));
const TIME_PATHS = pathsOf((s) => s.pattern === DATE_TIME_PATTERN);
/** Optional free strings (nullable, no pattern, no enum): blank means null. */
const NULLABLE_TEXT_PATHS = pathsOf(
  (s) => Array.isArray(s.type) && s.type.includes('string') && s.type.includes('null') && !s.pattern && !s.enum,
);

/** Calls `visit` with the holder and key of each string the paths name in the event, and its path. */
function eachString(
  paths: Map<string, string[][]>,
  type: string,
  event: object,
  visit: (holder: Record<string, unknown>, key: string, path: string[]) => void,
): void {
  for (const path of paths.get(type) ?? []) {
    let holder: unknown = event;
    for (const key of path.slice(0, -1)) holder = (holder as Record<string, unknown> | null)?.[key];
    const key = path[path.length - 1]!;
    if (typeof holder === 'object' && holder !== null && typeof (holder as Record<string, unknown>)[key] === 'string')
      visit(holder as Record<string, unknown>, key, path);
  }
}

/** The first date-time the pattern lets through that still names no instant (a 30 February, year 10000 in UTC). */
function timeIssue(type: string, event: object): EventIssue | undefined {
  let issue: EventIssue | undefined;
  eachString(TIME_PATHS, type, event, (holder, key, path) => {
    if (issue === undefined && normaliseDateTime(holder[key] as string) === undefined) {
      issue = {
        field: path.join('.'),
        message: 'is not a date-time that exists (a day the month lacks, or a UTC year outside 0000-9999)',
        unknownField: false,
      };
    }
  });
  return issue;
}

/**
 * Checks one event against the schema its `type` names (content fields still in it). Checking the one
 * variant `type` names, rather than the whole union, gives the single error a person can act on.
 */
export function checkEvent(value: unknown): EventCheck {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, field: '(line)', message: 'must be a JSON object holding one event', unknownField: false };
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string') {
    return { ok: false, field: 'type', message: 'must be a string naming the event type', unknownField: false };
  }
  const validator = validators.get(type);
  if (!validator) return { ok: false, field: 'type', message: 'is not a known event type', unknownField: false };
  if (!validator.Check(value))
    return { ok: false, ...describeIssue([...validator.Errors(value)] as ValidationIssue[]) };
  const issue = timeIssue(type, value);
  if (issue) return { ok: false, ...issue };
  return { ok: true, event: value as CrmEvent };
}

/**
 * Validates one event against the schema of its `type` and returns it without its content fields, in
 * stored form (`normaliseEvent`).
 * The message names the field at fault, never its value.
 */
export function parseEvent(value: unknown): ParseResult {
  const checked = checkEvent(value);
  if (checked.ok) return { ok: true, event: normaliseEvent(stripContent(checked.event)) };
  const type = (value as { type?: unknown } | null)?.type;
  const prefix = typeof type === 'string' && validators.has(type) ? `${type}: ` : '';
  const message = checked.unknownField
    ? `${prefix}unknown field "${checked.field}"`
    : `${prefix}field "${checked.field}" ${checked.message}`;
  return { ok: false, message };
}

/** A copy of the event without content fields: the only form the write side works with. */
export function stripContent<E extends CrmEvent>(event: E): E {
  const copy: Record<string, unknown> = { ...event };
  for (const field of CONTENT_FIELDS) delete copy[field];
  return copy as E;
}

/**
 * A checked event in the form the write side stores: every date-time in UTC with milliseconds, and every
 * optional text field that is empty or whitespace only as null (the API never exports an empty string).
 * Nested objects are copied.
 */
export function normaliseEvent<E extends CrmEvent>(event: E): E {
  const copy = structuredClone(event);
  eachString(TIME_PATHS, copy.type, copy, (holder, key) => {
    holder[key] = normaliseDateTime(holder[key] as string);
  });
  eachString(NULLABLE_TEXT_PATHS, copy.type, copy, (holder, key) => {
    if ((holder[key] as string).trim() === '') holder[key] = null;
  });
  return copy;
}
