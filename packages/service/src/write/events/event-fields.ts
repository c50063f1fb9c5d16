import { type Static, type TSchema, Type } from 'typebox';
import {
  ACTOR_KINDS,
  CALL_DIRECTIONS,
  CLASSIFIED_CALL_OUTCOMES,
  LEAD_SOURCES,
  PRIORITIES,
  SOURCE_PROVENANCES,
} from '../../schemas/enums.js';
import { Id, Nullable, StringEnum } from '../../schemas/helpers.js';
import { DATE_TIME_PATTERN } from './date-time.js';
import { NOT_BLANK_PATTERN } from './event-issue.js';

// The parts events are built from: the fixed value sets of their fields, the content fields they may carry,
// and the field schemas more than one event shares.

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
export const Time = (
  description = 'ISO 8601 date-time with a UTC offset (Z, +hh:mm, +hhmm or +hh); seconds optional',
) => Type.String({ pattern: DATE_TIME_PATTERN, description });
/** When the business event happened. */
export const At = Time('when the business event happened: ISO 8601 date-time with a UTC offset; seconds optional');
export const Opt = <T extends TSchema>(s: T) => Type.Optional(s);
export const NullableTime = Nullable(Time());
/** A string that must hold a value: empty or whitespace only is refused (an optional text field takes null). */
export const Text = (description?: string) =>
  Type.String({ pattern: NOT_BLANK_PATTERN, ...(description ? { description } : {}) });
/** Ids with no public prefix (organizations, submissions, messages). */
export const InternalId = Type.String({ pattern: '^[0-9A-Za-z_-]{1,64}$' });
export const Actor = StringEnum(ACTOR_KINDS);
export const Members = Type.Array(Id('member'));

/** Pattern of an event's `id`: 1 to 128 printable ASCII characters, no space. */
export const EVENT_ID_PATTERN = '^[!-~]{1,128}$';
/**
 * The producer's id of an event, unique within its source and kept across retries: an event whose id was
 * applied before is a duplicate (same content) or a conflict (other content), never applied again.
 */
export const EventId = Type.String({
  pattern: EVENT_ID_PATTERN,
  description:
    "the producer's id of this event, unique within its source: 1 to 128 printable ASCII characters, no space",
});

export function Event<T extends string, P extends Record<string, TSchema>>(type: T, props: P, description: string) {
  return Type.Object(
    { type: Type.Literal(type), id: Opt(EventId), at: At, ...props, ...content },
    { additionalProperties: false, description },
  );
}

export const IdName = Type.Object(
  { id: Opt(Nullable(Type.String())), name: Opt(Nullable(Type.String())) },
  { additionalProperties: false },
);
export const IdOnly = Type.Object({ id: Opt(Nullable(Type.String())) }, { additionalProperties: false });
export const StringMap = Type.Record(Type.String(), Type.String());

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

export const PermissionsInput = {
  do_not_contact: Opt(Type.Boolean()),
  email_opt_out: Opt(Type.Boolean()),
  whatsapp_consent: Opt(Nullable(Type.Boolean())),
};

/** Exported lead fields a `lead.updated` may change (omitted = unchanged). */
export const LeadFields = {
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

export const StageInput = Type.Object(
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

export const CallFields = {
  lead: Opt(Nullable(Id('lead'))),
  direction: Opt(Nullable(StringEnum(CALL_DIRECTIONS))),
  started_at: Opt(NullableTime),
  duration_seconds: Opt(Nullable(Type.Number({ minimum: 0 }))),
  live: Opt(Type.Boolean()),
  carrier_result: Opt(Nullable(StringEnum(CARRIER_RESULTS))),
  verdict: Opt(Nullable(StringEnum(CLASSIFIED_CALL_OUTCOMES))),
};
