import type {
  ActorKind,
  ArchiveReason,
  BookingStatus,
  CallDirection,
  ClassifiedCallOutcome,
  ConversationChannel,
  ConversationStatus,
  LeadSource,
  LeadStatus,
  OrganizationPlan,
  PhoneStatus,
  Priority,
  SourceProvenance,
  TeamStateValue,
  WhatsappDeliveryStatus,
} from '../schemas/enums.js';
import type { OriginalCapture } from '../schemas/records.js';
import type { CallLine, CarrierResult, MESSAGE_DIRECTIONS, MESSAGE_PURPOSES } from './events/event-fields.js';

// Internal state of the write side, one shape per entity kind. Never exported as is: projections
// turn it into records. Content (text, notes, transcripts, form answers) has no field here on purpose.

export interface OrganizationState {
  name: string;
  plan: OrganizationPlan;
  apiAgreed: boolean;
}

/** Read and changed by access control too: keep these names. */
export interface TeamState {
  organization: string | null;
  state: TeamStateValue;
  legalSetupDone: boolean;
  sensitiveSector: boolean;
  livemode: boolean;
  capturedAt: string | null;
  /** When a key first named the team (src/feed/capture.ts prepares it, then sets `capturedAt`); absent on older rows. */
  captureRequestedAt?: string | null;
  name: string | null;
  businessHoursTimezone: string | null;
  defaultCountry: string | null;
}

export interface MemberState {
  displayName: string | null;
  left: boolean;
}

export interface BookingServiceState {
  name: string;
  meetingType: string;
  deleted: boolean;
}

export interface StageState {
  id: string;
  name: string;
  isDefault: boolean;
  isFinal: boolean;
  isArchive: boolean;
  mode: string;
}

export interface BoardState {
  name: string;
  isDefault: boolean;
  isArchived: boolean;
  /** The stage chosen for booked appointments; null: the default rule (`bookedStage` in publishers.ts). */
  appointmentBookedStage: string | null;
  stages: StageState[];
}

export interface ContactPermissionsState {
  doNotContact: boolean;
  emailOptOut: boolean;
  emailOptOutAt: string | null;
  whatsappConsent: boolean | null;
}

export interface LeadState {
  name: string | null;
  surname: string | null;
  email: string | null;
  company: string | null;
  /** E.164 when the number validated; the raw number is not kept. */
  phone: string | null;
  phoneStatus: PhoneStatus;
  status: LeadStatus | null;
  statusSetBy: ActorKind | null;
  archiveReason: ArchiveReason | null;
  archivedFromStatus: LeadStatus | null;
  permissions: ContactPermissionsState;
  /** The kept lead this one was merged into (also the entity's parent). */
  mergedInto: string | null;
  transferredTo: { team: string; lead: string | null } | null;
  /** The original lead when this one was created by a transfer. */
  transferredFrom: { team: string; lead: string } | null;
  revivedAt: string | null;
  pipelineCleared: boolean;
  convertedAt: string | null;
  valueAtConversion: number | null;
  priority: Priority | null;
  tags: string[];
  board: string | null;
  stage: string | null;
  assignees: string[] | null;
  estimatedValue: number | null;
  source: LeadSource | null;
  sourceChannel: string | null;
  sourceDetail: string | null;
  sourceProvenance: SourceProvenance | null;
  createdAt: string;
  /** Frozen once at creation. */
  originalCapture: OriginalCapture | null;
  /** Fields that are not exported: changing them writes no version. */
  internal: { score: number | null; language: string | null; lastViewedAt: string | null };
  /** Activities written so far; gives each activity a deterministic id. */
  activitySeq: number;
}

export interface SubmissionState {
  receivedAt: string;
  submittedAt: string | null;
  externalProvider: string | null;
  campaign: { id: string | null; name: string | null } | null;
  ad: { id: string | null; name: string | null } | null;
  adSet: { id: string | null; name: string | null } | null;
  form: { id: string | null; name: string | null } | null;
  deleted: boolean;
  /** Arrival order among the lead's submissions (ties on receivedAt). */
  seq: number;
}

export interface CallState {
  lead: string | null;
  line: CallLine;
  direction: CallDirection | null;
  startedAt: string;
  durationSeconds: number | null;
  live: boolean;
  carrierResult: CarrierResult | null;
  verdict: ClassifiedCallOutcome | null;
}

export interface ConversationState {
  lead: string | null;
  channel: ConversationChannel;
  status: ConversationStatus;
  assignees: string[];
  startedAt: string;
  closedAt: string | null;
  createdAt: string;
  /** Messages recorded so far; orders messages recorded at the same instant. */
  messageSeq: number;
}

export interface MessageState {
  direction: (typeof MESSAGE_DIRECTIONS)[number];
  purpose: (typeof MESSAGE_PURPOSES)[number] | null;
  failed: boolean;
  imported: boolean;
  visitorTurn: boolean;
  at: string;
  seq: number;
  receipt: WhatsappDeliveryStatus | null;
}

/** What stays of a message `message.erased` removed (ids only): `admin erasures export` lists it. */
export interface ErasedMessageState {
  /** When the service recorded the erasure (ISO 8601). */
  erasedAt: string;
}

export interface BookingState {
  lead: string | null;
  service: string;
  status: BookingStatus;
  startsAt: string;
  endsAt: string;
  assignees: string[];
  cancelledAt: string | null;
  createdAt: string;
}
