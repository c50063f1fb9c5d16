// Every fixed value set of the spec, written once. Types derive from these arrays.

export const LEAD_STATUSES = [
  'new',
  'contacted',
  'qualified',
  'negotiating',
  'converted',
  'lost',
  'archived',
  'unreachable',
] as const;
export type LeadStatus = (typeof LEAD_STATUSES)[number];

export const ACTOR_KINDS = ['human', 'ai', 'system', 'api', 'unknown'] as const;
export type ActorKind = (typeof ACTOR_KINDS)[number];

export const ARCHIVE_REASONS = [
  'opt_out',
  'no_consent',
  'not_interested',
  'not_qualified',
  'no_contact',
  'merged',
  'family_transfer',
  'other',
] as const;
export type ArchiveReason = (typeof ARCHIVE_REASONS)[number];

export const PHONE_STATUSES = ['valid', 'invalid', 'missing'] as const;
export type PhoneStatus = (typeof PHONE_STATUSES)[number];

export const RECORD_KINDS_OF_LEAD = ['lead', 'client'] as const;
export type RecordKindOfLead = (typeof RECORD_KINDS_OF_LEAD)[number];

export const PRIORITIES = ['low', 'medium', 'high', 'urgent'] as const;
export type Priority = (typeof PRIORITIES)[number];

export const LEAD_SOURCES = [
  'platform_lead_ads',
  'manual',
  'website_form',
  'booking_page',
  'csv_import',
  'api',
] as const;
export type LeadSource = (typeof LEAD_SOURCES)[number];

export const SOURCE_PROVENANCES = ['server_written', 'member_editable'] as const;
export type SourceProvenance = (typeof SOURCE_PROVENANCES)[number];

/** Activities that record a move of the lead's status (their `from` and `to` are statuses). */
export const STATUS_ACTIVITY_TYPES = ['status_changed', 'archived', 'unarchived', 'revived'] as const;
export type StatusActivityType = (typeof STATUS_ACTIVITY_TYPES)[number];
export const ACTIVITY_TYPES = [...STATUS_ACTIVITY_TYPES, 'stage_changed', 'assignees_changed'] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

export const CALL_DIRECTIONS = ['inbound', 'outbound'] as const;
export type CallDirection = (typeof CALL_DIRECTIONS)[number];

/** Outcomes someone classified: what a call event's verdict (inbound verdict, voice-platform analysis) can say. */
export const CLASSIFIED_CALL_OUTCOMES = [
  'answered_human',
  'answered_ai',
  'voicemail',
  'no_answer',
  'busy',
  'failed',
] as const;
export type ClassifiedCallOutcome = (typeof CLASSIFIED_CALL_OUTCOMES)[number];
export const CALL_OUTCOMES = [...CLASSIFIED_CALL_OUTCOMES, 'unknown'] as const;
export type CallOutcome = (typeof CALL_OUTCOMES)[number];

export const OUTCOME_BASES = [
  'inbound_verdict',
  'ai_analysis',
  'duration_floor',
  'carrier_answer_only',
  'browser_session',
  'none',
] as const;
export type OutcomeBasis = (typeof OUTCOME_BASES)[number];

/** Also what a WhatsApp receipt event reports: the facet exports the receipt as it came. */
export const WHATSAPP_DELIVERY_STATUSES = ['delivered', 'read', 'failed'] as const;
export type WhatsappDeliveryStatus = (typeof WHATSAPP_DELIVERY_STATUSES)[number];

export const CONVERSATION_CHANNELS = [
  'whatsapp',
  'sms',
  'email',
  'widget',
  'phone',
  'instagram',
  'messenger',
  'other',
] as const;
export type ConversationChannel = (typeof CONVERSATION_CHANNELS)[number];

export const CONVERSATION_STATUSES = ['open', 'pending', 'closed'] as const;
export type ConversationStatus = (typeof CONVERSATION_STATUSES)[number];

export const BOOKING_STATUSES = ['scheduled', 'cancelled', 'completed', 'no_show'] as const;
export type BookingStatus = (typeof BOOKING_STATUSES)[number];

export const FEED_KINDS = [
  'lead',
  'lead_attribution',
  'lead_response',
  'activity',
  'call',
  'conversation',
  'booking',
  'board',
] as const;
export type FeedKind = (typeof FEED_KINDS)[number];

/** Everything the records table holds: the feed kinds plus the never-paged, never-fed lists. */
export const RECORD_KINDS = [...FEED_KINDS, 'team', 'member', 'booking_service'] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];

export const REMOVAL_REASONS = ['erased', 'deleted'] as const;
export type RemovalReason = (typeof REMOVAL_REASONS)[number];

/** A team's state: only `active` teams are served (access control reads it, the write side sets it). */
export const TEAM_STATES = ['active', 'disabled', 'archived', 'billing_only', 'api_paused'] as const;
export type TeamStateValue = (typeof TEAM_STATES)[number];

/** An organization's plan: `api_included` entitles its teams to keys. */
export const ORGANIZATION_PLANS = ['api_included', 'no_api'] as const;
export type OrganizationPlan = (typeof ORGANIZATION_PLANS)[number];

export const SCOPES = ['teams:read', 'crm:read', 'calls:read', 'messages:read', 'calendar:read'] as const;
export type Scope = (typeof SCOPES)[number];

/** Public id prefixes by what they name. */
export const ID_PREFIXES = {
  team: 'team_',
  member: 'mem_',
  board: 'brd_',
  stage: 'stg_',
  lead: 'lead_',
  activity: 'act_',
  call: 'call_',
  conversation: 'conv_',
  booking: 'bkg_',
  booking_service: 'svc_',
  integration: 'prn_',
} as const;
export type IdPrefixed = keyof typeof ID_PREFIXES;
