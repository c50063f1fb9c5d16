import { iso } from '../../src/clock.js';
import type { FeedKind, RecordKind } from '../../src/schemas/enums.js';
import { FEED_KINDS } from '../../src/schemas/enums.js';
import type {
  Activity,
  Board,
  Booking,
  BookingService,
  Call,
  Conversation,
  Lead,
  LeadAttribution,
  LeadResponse,
  Member,
  Team,
} from '../../src/schemas/records.js';
import type { Store } from '../../src/store/store.js';

// Schema-valid records written straight through the Store's write transaction, with the filter
// columns the HTTP layer reads by. Each `put` is one version and, for feed kinds, one feed entry.

const T0 = Date.parse('2026-01-15T08:00:00.000Z');
const at = (minutes: number) => iso(T0 + minutes * 60_000);

export function team(id: string, over: Partial<Team> = {}): Team {
  return {
    id,
    object: 'team',
    livemode: true,
    name: `Team ${id}`,
    timezone: 'Europe/Berlin',
    default_country: 'DE',
    ...over,
  };
}
export function member(id: string, teamId: string): Member {
  return { id, object: 'member', livemode: true, team: teamId, display_name: `Member ${id}` };
}
export function service(id: string, teamId: string): BookingService {
  return {
    id,
    object: 'booking_service',
    livemode: true,
    team: teamId,
    name: 'Consultation',
    meeting_type: 'in_person',
  };
}
export function board(id: string, teamId: string, stages: [string, ...string[]]): Board {
  return {
    id,
    object: 'board',
    livemode: true,
    team: teamId,
    name: `Board ${id}`,
    is_default: true,
    is_archived: false,
    appointment_booked_stage: stages[0],
    stages: stages.map((s, position) => ({
      object: 'stage',
      id: s,
      name: `Stage ${position}`,
      position,
      is_default: position === 0,
      is_final: position === stages.length - 1,
      is_archive: false,
      mode: 'standard',
    })),
    version: 1,
    updated_at: at(0),
  };
}
export function lead(id: string, teamId: string, over: Partial<Lead> = {}): Lead {
  return {
    id,
    object: 'lead',
    livemode: true,
    team: teamId,
    record_kind: 'lead',
    name: 'Ada',
    surname: 'Lovelace',
    email: `${id}@example.com`,
    company: null,
    phone: '+4930123456',
    phone_status: 'valid',
    status: 'new',
    status_set_by: 'human',
    archive_reason: null,
    archived_from_status: null,
    contact_permissions: {
      do_not_contact: false,
      email_opt_out: false,
      email_opt_out_at: null,
      whatsapp_consent: null,
      provenance: { do_not_contact: null, email_opt_out: null, whatsapp_consent: null },
    },
    merged_into: null,
    transferred_to: null,
    revived_at: null,
    pipeline_cleared: false,
    converted_at: null,
    value_at_conversion: null,
    priority: 'medium',
    tags: ['lead'],
    board: null,
    stage: null,
    assignees: [],
    estimated_value: 1200.5,
    estimated_value_currency: null,
    source: 'manual',
    source_channel: 'phone',
    source_detail: null,
    source_provenance: 'member_editable',
    created_at: at(1),
    version: 1,
    updated_at: at(1),
    ...over,
  };
}
export function attribution(leadId: string, teamId: string): LeadAttribution {
  return {
    id: leadId,
    object: 'lead_attribution',
    livemode: true,
    team: teamId,
    original_capture: null,
    original_capture_missing_reason: 'not_captured',
    latest_submission: null,
    latest_submission_missing_reason: 'not_captured',
    version: 1,
    updated_at: at(2),
  };
}
export function response(leadId: string, teamId: string): LeadResponse {
  return {
    id: leadId,
    object: 'lead_response',
    livemode: true,
    team: teamId,
    last_inbound_at: at(3),
    last_outbound_at: null,
    awaiting_reply: true,
    last_answered_call_at: null,
    last_whatsapp_delivery_status: null,
    coverage: { conversations: 1, calls: 0, channels_without_delivery_data: [], truncated: false },
    version: 1,
    updated_at: at(3),
  };
}
export function activity(id: string, leadId: string, teamId: string): Activity {
  return {
    id,
    object: 'activity',
    livemode: true,
    team: teamId,
    lead: leadId,
    occurred_at: at(4),
    actor_kind: 'human',
    stage_snapshot: null,
    value_snapshot: null,
    version: 1,
    updated_at: at(4),
    type: 'status_changed',
    from: 'new',
    to: 'contacted',
  };
}
export function call(id: string, teamId: string, leadId: string | null): Call {
  return {
    id,
    object: 'call',
    livemode: true,
    team: teamId,
    lead: leadId,
    direction: 'inbound',
    started_at: at(5),
    duration_seconds: 42,
    outcome: 'answered_human',
    outcome_basis: 'inbound_verdict',
    version: 1,
    updated_at: at(5),
  };
}
export function conversation(id: string, teamId: string, leadId: string | null): Conversation {
  return {
    id,
    object: 'conversation',
    livemode: true,
    team: teamId,
    lead: leadId,
    channel: 'whatsapp',
    status: 'open',
    assignees: [],
    started_at: at(6),
    last_message_at: at(6),
    last_inbound_at: at(6),
    last_outbound_at: null,
    closed_at: null,
    inbound_count: 1,
    outbound_count: 0,
    created_at: at(6),
    version: 1,
    updated_at: at(6),
  };
}
export function booking(id: string, teamId: string, leadId: string | null, serviceId: string): Booking {
  return {
    id,
    object: 'booking',
    livemode: true,
    team: teamId,
    lead: leadId,
    service: serviceId,
    status: 'scheduled',
    starts_at: at(60),
    ends_at: at(90),
    assignees: [],
    cancelled_at: null,
    created_at: at(7),
    version: 1,
    updated_at: at(7),
  };
}

type AnyRecord = { id: string; team?: string; object: string; version?: number; updated_at?: string } & Record<
  string,
  unknown
>;

/** Writes `record` as kind `kind` (one version) and, for feed kinds, its feed entry recorded at `recordedAt`. */
export async function put(store: Store, kind: RecordKind, record: AnyRecord, recordedAt = T0): Promise<void> {
  const teamId = (kind === 'team' ? record.id : record.team) as string;
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  const json = JSON.stringify(record);
  await store.write(async (tx) => {
    await tx.putRecord({
      kind,
      id: record.id,
      team: teamId,
      lead:
        kind === 'lead' ? null : ['lead_attribution', 'lead_response'].includes(kind) ? record.id : str(record.lead),
      board: kind === 'lead' ? str(record.board) : null,
      stage: kind === 'lead' ? str(record.stage) : null,
      status: kind === 'lead' ? str(record.status) : null,
      email: kind === 'lead' ? (str(record.email)?.trim().toLowerCase() ?? null) : null,
      phone: kind === 'lead' ? str(record.phone) : null,
      version: record.version ?? 1,
      updatedAt: record.updated_at ?? iso(recordedAt),
      json,
    });
    if ((FEED_KINDS as readonly string[]).includes(kind)) {
      await tx.appendFeed({
        team: teamId,
        kind: kind as FeedKind,
        id: record.id,
        version: record.version ?? 1,
        recordedAt,
        body: json,
        removed: null,
      });
    }
  });
}

/** Removes a record the way the write side does: tombstone plus a removal feed entry. */
export async function remove(
  store: Store,
  kind: FeedKind,
  id: string,
  teamId: string,
  reason: 'erased' | 'deleted',
  version: number,
  recordedAt = T0,
): Promise<void> {
  await store.write(async (tx) => {
    await tx.removeRecord(kind, id, reason, version, iso(recordedAt));
    await tx.appendFeed({ team: teamId, kind, id, version, recordedAt, body: null, removed: reason });
  });
}

export const TEAM_A = 'team_A1';
export const TEAM_B = 'team_B2';
export const TEAM_C = 'team_C3';
export const KEY_A = 'crmx_live_aaaaaaaaaaaa0000000000000000000000000000aaaa';
export const KEY_AB = 'crmx_live_bbbbbbbbbbbb0000000000000000000000000000bbbb';
export const KEY_NONE = 'crmx_live_cccccccccccc0000000000000000000000000000cccc';
export const BASE_TIME = T0;
