import type { WriteTx } from '../../store/store.js';
import type { BoardState, BookingServiceState, MemberState, OrganizationState, TeamState } from '../types.js';
import type { WriteContext } from './context.js';
import type { EventOf } from './events.js';
import { removeRecord } from './publish.js';
import { publishBoard, publishMember, publishService, publishTeam } from './publishers.js';
import { WriteError } from './write-error.js';

// Organizations, teams, members, bookable services and boards.

export async function upsertOrganization(ctx: WriteContext, e: EventOf<'organization.upsert'>): Promise<void> {
  const existing = await ctx.tx.getEntity<OrganizationState>('organization', e.organization);
  const state: OrganizationState = {
    name: e.name,
    plan: e.plan,
    apiAgreed: e.api_agreed ?? existing?.state.apiAgreed ?? false,
  };
  await ctx.tx.putEntity({ kind: 'organization', id: e.organization, team: null, parent: null, state });
}

export async function upsertTeam(ctx: WriteContext, e: EventOf<'team.upsert'>): Promise<void> {
  const old = (await ctx.tx.getEntity<TeamState>('team', e.team))?.state;
  if (old && e.livemode !== undefined && e.livemode !== old.livemode) {
    throw new WriteError(`team ${e.team}: livemode is fixed when the team is created`);
  }
  const organization = e.organization === undefined ? (old?.organization ?? null) : e.organization;
  if (organization !== null) await ctx.need('organization', organization);
  const state: TeamState = {
    organization,
    state: e.state ?? old?.state ?? 'active',
    legalSetupDone: e.legal_setup_done ?? old?.legalSetupDone ?? true,
    sensitiveSector: e.sensitive_sector ?? old?.sensitiveSector ?? false,
    livemode: e.livemode ?? old?.livemode ?? true,
    capturedAt:
      e.captured_at === undefined ? (old?.capturedAt ?? null) : e.captured_at && new Date(e.captured_at).toISOString(),
    captureRequestedAt: old?.captureRequestedAt ?? null,
    name: e.name === undefined ? (old?.name ?? null) : e.name,
    businessHoursTimezone:
      e.business_hours_timezone === undefined ? (old?.businessHoursTimezone ?? null) : e.business_hours_timezone,
    defaultCountry: e.default_country === undefined ? (old?.defaultCountry ?? null) : e.default_country,
  };
  await putTeam(ctx.tx, e.team, state);
  ctx.forgetTeam(e.team);
  await publishTeam(ctx, e.team, state);
}

/**
 * The one writer of `team` entities (CRM events, operator changes, capture): the entity's parent is
 * always the team's organization, so lookups by organization see a moved team at once.
 */
export async function putTeam(tx: Pick<WriteTx, 'putEntity'>, id: string, state: TeamState): Promise<void> {
  await tx.putEntity<TeamState>({ kind: 'team', id, team: id, parent: state.organization, state });
}

export async function memberJoined(ctx: WriteContext, e: EventOf<'member.joined'>): Promise<void> {
  await ctx.team(e.team);
  const existing = await ctx.tx.getEntity<MemberState>('member', e.member);
  if (existing && existing.team !== e.team) throw new WriteError(`member ${e.member} belongs to another team`);
  if (existing?.state.left)
    throw new WriteError(`member ${e.member} left the team; a member who comes back needs a new id`);
  const member = {
    kind: 'member' as const,
    id: e.member,
    team: e.team,
    parent: null,
    state: { displayName: e.display_name ?? existing?.state.displayName ?? null, left: false },
  };
  await ctx.tx.putEntity<MemberState>(member);
  await publishMember(ctx, member);
}

export async function memberLeft(ctx: WriteContext, e: EventOf<'member.left'>): Promise<void> {
  const member = await ctx.need<MemberState>('member', e.member);
  if (member.state.left) throw new WriteError(`member ${e.member} has already left`);
  member.state.left = true;
  await ctx.tx.putEntity(member);
  // Dropped from the list; leads, bookings and activities keep naming the id.
  await removeRecord(ctx.tx, ctx.clock, 'member', member.id, member.team as string, 'deleted');
}

export async function serviceCreated(ctx: WriteContext, e: EventOf<'service.created'>): Promise<void> {
  await ctx.team(e.team);
  if (await ctx.tx.getEntity('booking_service', e.service))
    throw new WriteError(`bookable service ${e.service} exists`);
  const service = {
    kind: 'booking_service' as const,
    id: e.service,
    team: e.team,
    parent: null,
    state: { name: e.name, meetingType: e.meeting_type ?? 'in_person', deleted: false },
  };
  await ctx.tx.putEntity<BookingServiceState>(service);
  await publishService(ctx, service);
}

export async function serviceDeleted(ctx: WriteContext, e: EventOf<'service.deleted'>): Promise<void> {
  const service = await ctx.need<BookingServiceState>('booking_service', e.service);
  if (service.state.deleted) throw new WriteError(`bookable service ${e.service} is already deleted`);
  service.state.deleted = true;
  await ctx.tx.putEntity(service);
  // Dropped from the list; its bookings keep naming the id.
  await removeRecord(ctx.tx, ctx.clock, 'booking_service', service.id, service.team as string, 'deleted');
}

export async function upsertBoard(ctx: WriteContext, e: EventOf<'board.upsert'>): Promise<void> {
  await ctx.team(e.team);
  const existing = await ctx.tx.getEntity<BoardState>('board', e.board);
  if (existing && existing.team !== e.team) throw new WriteError(`board ${e.board} belongs to another team`);
  const ids = e.stages.map((s) => s.stage);
  if (new Set(ids).size !== ids.length) throw new WriteError(`board ${e.board} lists a stage twice`);
  for (const other of await ctx.tx.findEntities<BoardState>('board', { team: e.team })) {
    if (other.id === e.board) continue;
    const taken = other.state.stages.find((s) => ids.includes(s.id));
    if (taken) throw new WriteError(`stage ${taken.id} is already on board ${other.id}`);
  }
  if (e.appointment_booked_stage && !ids.includes(e.appointment_booked_stage)) {
    throw new WriteError(`appointment_booked_stage ${e.appointment_booked_stage} is not a stage of board ${e.board}`);
  }
  // The stage chosen for booked appointments: omitted keeps the earlier choice while that stage is still
  // on the board; null (or none left) falls back to the rule in `bookedStage`.
  const earlier = existing?.state.appointmentBookedStage ?? null;
  const booked =
    e.appointment_booked_stage === undefined
      ? earlier && ids.includes(earlier)
        ? earlier
        : null
      : e.appointment_booked_stage;
  const board = {
    kind: 'board' as const,
    id: e.board,
    team: e.team,
    parent: null,
    state: {
      name: e.name,
      isDefault: e.is_default ?? existing?.state.isDefault ?? false,
      isArchived: existing?.state.isArchived ?? false,
      appointmentBookedStage: booked,
      stages: e.stages.map((s) => ({
        id: s.stage,
        name: s.name,
        isDefault: s.is_default ?? false,
        isFinal: s.is_final ?? false,
        isArchive: s.is_archive ?? false,
        mode: s.mode ?? 'standard',
      })),
    },
  };
  await ctx.tx.putEntity<BoardState>(board);
  await publishBoard(ctx, board);
}

export async function boardArchived(ctx: WriteContext, e: EventOf<'board.archived'>): Promise<void> {
  const board = await ctx.need<BoardState>('board', e.board);
  if (board.state.isArchived) throw new WriteError(`board ${e.board} is already archived`);
  board.state.isArchived = true;
  await ctx.tx.putEntity(board);
  await publishBoard(ctx, board);
}
