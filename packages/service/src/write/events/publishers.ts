import type { Entity } from '../../store/store.js';
import type {
  BoardState,
  BookingServiceState,
  BookingState,
  CallState,
  ConversationState,
  LeadState,
  MemberState,
  MessageState,
  TeamState,
} from '../types.js';
import { callOutcome } from './call-outcome.js';
import type { WriteContext } from './context.js';
import { PENDING, type Projection, publish, publishListed } from './publish.js';
import { teamTimezone } from './timezone.js';

// Projections: internal state to exported records, typed by the schemas in src/schemas/records.ts and
// with keys in the order those schemas list them (the stored JSON is served as is).

/** Trimmed and lower-cased, as lead search matches it. */
function searchEmail(email: string | null): string | null {
  const e = email?.trim().toLowerCase();
  return e ? e : null;
}

export async function publishLead(ctx: WriteContext, lead: Entity<LeadState>): Promise<boolean> {
  const s = lead.state;
  const team = lead.team as string;
  const p = s.permissions;
  const projection: Projection<'lead'> = {
    id: lead.id,
    object: 'lead',
    livemode: await ctx.livemode(team),
    team,
    record_kind: s.status === null ? 'client' : 'lead',
    name: s.name,
    surname: s.surname,
    email: s.email,
    company: s.company,
    phone: s.phone,
    phone_status: s.phoneStatus,
    status: s.status,
    status_set_by: s.status === null ? null : s.statusSetBy,
    archive_reason: s.archiveReason,
    archived_from_status: s.archivedFromStatus,
    contact_permissions: {
      do_not_contact: p.doNotContact,
      email_opt_out: p.emailOptOut,
      email_opt_out_at: p.emailOptOutAt,
      whatsapp_consent: p.whatsappConsent,
      provenance: { do_not_contact: null, email_opt_out: null, whatsapp_consent: null },
    },
    merged_into: s.mergedInto,
    transferred_to: s.transferredTo ? { team: s.transferredTo.team, lead: s.transferredTo.lead } : null,
    revived_at: s.revivedAt,
    pipeline_cleared: s.pipelineCleared,
    converted_at: s.status === 'converted' ? s.convertedAt : null,
    value_at_conversion: s.valueAtConversion,
    priority: s.priority,
    tags: s.tags,
    board: s.board,
    stage: s.stage,
    assignees: s.assignees,
    estimated_value: s.estimatedValue,
    estimated_value_currency: null,
    source: s.source,
    source_channel: s.sourceChannel,
    source_detail: s.sourceDetail,
    source_provenance: s.source === null ? null : s.sourceProvenance,
    created_at: s.createdAt,
    ...PENDING,
  };
  return publish(ctx.tx, ctx.clock, 'lead', lead.id, team, projection, {
    board: s.board,
    stage: s.stage,
    status: s.status,
    email: searchEmail(s.email),
    phone: s.phone,
  });
}

/**
 * Where booked appointments land: the stage chosen for it, else the board's default stage, else its first
 * stage. Every board has at least one stage, so every board names one.
 */
export function bookedStage(s: BoardState): string | null {
  const chosen = s.stages.find((stage) => stage.id === s.appointmentBookedStage);
  return (chosen ?? s.stages.find((stage) => stage.isDefault) ?? s.stages[0])?.id ?? null;
}

export async function publishBoard(ctx: WriteContext, board: Entity<BoardState>): Promise<boolean> {
  const s = board.state;
  const team = board.team as string;
  const projection: Projection<'board'> = {
    id: board.id,
    object: 'board',
    livemode: await ctx.livemode(team),
    team,
    name: s.name,
    is_default: s.isDefault,
    is_archived: s.isArchived,
    // Null only for a board stored before boards needed a stage (docs/write-side.md): the one value a
    // projection writes outside its schema, kept so such a board exports what it always did.
    appointment_booked_stage: bookedStage(s) as string,
    stages: s.stages.map((stage, position) => ({
      object: 'stage',
      id: stage.id,
      name: stage.name,
      position,
      is_default: stage.isDefault,
      is_final: stage.isFinal,
      is_archive: stage.isArchive,
      mode: stage.mode,
    })),
    ...PENDING,
  };
  return publish(ctx.tx, ctx.clock, 'board', board.id, team, projection);
}

export async function publishTeam(ctx: WriteContext, id: string, s: TeamState): Promise<void> {
  await publishListed(ctx.tx, ctx.clock, 'team', id, id, {
    id,
    object: 'team',
    livemode: s.livemode,
    name: s.name,
    timezone: teamTimezone(s.businessHoursTimezone, s.defaultCountry),
    default_country: s.defaultCountry,
  });
}

export async function publishMember(ctx: WriteContext, member: Entity<MemberState>): Promise<void> {
  const team = member.team as string;
  await publishListed(ctx.tx, ctx.clock, 'member', member.id, team, {
    id: member.id,
    object: 'member',
    livemode: await ctx.livemode(team),
    team,
    display_name: member.state.displayName,
  });
}

export async function publishService(ctx: WriteContext, service: Entity<BookingServiceState>): Promise<void> {
  const team = service.team as string;
  await publishListed(ctx.tx, ctx.clock, 'booking_service', service.id, team, {
    id: service.id,
    object: 'booking_service',
    livemode: await ctx.livemode(team),
    team,
    name: service.state.name,
    meeting_type: service.state.meetingType,
  });
}

export async function publishCall(ctx: WriteContext, call: Entity<CallState>): Promise<boolean> {
  const s = call.state;
  const team = call.team as string;
  const { outcome, basis } = callOutcome(s, ctx.options.answeredCallFloorSeconds);
  const projection: Projection<'call'> = {
    id: call.id,
    object: 'call',
    livemode: await ctx.livemode(team),
    team,
    lead: s.lead,
    direction: s.direction,
    started_at: s.startedAt,
    duration_seconds: s.live || s.durationSeconds === null ? null : Math.floor(s.durationSeconds),
    outcome,
    outcome_basis: basis,
    ...PENDING,
  };
  return publish(ctx.tx, ctx.clock, 'call', call.id, team, projection, { lead: s.lead });
}

function latest(a: string | null, b: string): string {
  return a === null || b > a ? b : a;
}

export async function publishConversation(ctx: WriteContext, conv: Entity<ConversationState>): Promise<boolean> {
  const s = conv.state;
  const team = conv.team as string;
  let lastMessage: string | null = null;
  let lastInbound: string | null = null;
  let lastOutbound: string | null = null;
  let inbound = 0;
  let outbound = 0;
  // A failed message never reached anyone: it is not counted and moves no timestamp.
  for (const m of await ctx.tx.viewEntities<MessageState>('message', { parent: conv.id })) {
    if (m.state.direction === 'inbound') {
      inbound += 1;
      lastInbound = latest(lastInbound, m.state.at);
    } else if (!m.state.failed) {
      outbound += 1;
      lastOutbound = latest(lastOutbound, m.state.at);
    } else continue;
    lastMessage = latest(lastMessage, m.state.at);
  }
  const projection: Projection<'conversation'> = {
    id: conv.id,
    object: 'conversation',
    livemode: await ctx.livemode(team),
    team,
    lead: s.lead,
    channel: s.channel,
    status: s.status,
    assignees: s.assignees,
    started_at: s.startedAt,
    last_message_at: lastMessage,
    last_inbound_at: lastInbound,
    last_outbound_at: lastOutbound,
    closed_at: s.closedAt,
    inbound_count: inbound,
    outbound_count: outbound,
    created_at: s.createdAt,
    ...PENDING,
  };
  return publish(ctx.tx, ctx.clock, 'conversation', conv.id, team, projection, { lead: s.lead });
}

export async function publishBooking(ctx: WriteContext, booking: Entity<BookingState>): Promise<boolean> {
  const s = booking.state;
  const team = booking.team as string;
  const projection: Projection<'booking'> = {
    id: booking.id,
    object: 'booking',
    livemode: await ctx.livemode(team),
    team,
    lead: s.lead,
    service: s.service,
    status: s.status,
    starts_at: s.startsAt,
    ends_at: s.endsAt,
    assignees: s.assignees,
    cancelled_at: s.cancelledAt,
    created_at: s.createdAt,
    ...PENDING,
  };
  return publish(ctx.tx, ctx.clock, 'booking', booking.id, team, projection, { lead: s.lead });
}
