import { ARCHIVE_REASONS, type ArchiveReason } from '../../schemas/enums.js';
import type { Entity } from '../../store/store.js';
import type { LeadState } from '../types.js';
import { recordActivity } from './activities.js';
import type { WriteContext } from './context.js';
import type { EventOf } from './events.js';
import { buildOriginalCapture, publishFacets } from './facets.js';
import { archiveLead, moveStatus } from './lead-state.js';
import { normalisePhone } from './phone.js';
import { publishLead } from './publishers.js';
import { WriteError } from './write-error.js';

// Creating a lead and every operation on one lead. Each saves the lead and republishes it; the lead
// gets a new version only when an exported field changed.

type LeadFields = Omit<EventOf<'lead.updated'>, 'type' | 'at' | 'lead'>;

function applyFields(s: LeadState, f: LeadFields): void {
  if (f.name !== undefined) s.name = f.name;
  if (f.surname !== undefined) s.surname = f.surname;
  if (f.email !== undefined) s.email = f.email;
  if (f.company !== undefined) s.company = f.company;
  if (f.phone !== undefined) {
    const { phone, status } = normalisePhone(f.phone);
    s.phone = phone;
    s.phoneStatus = status;
  }
  if (f.priority !== undefined) s.priority = f.priority;
  if (f.tags !== undefined) s.tags = [...f.tags];
  if (f.estimated_value !== undefined) s.estimatedValue = f.estimated_value;
  if (f.source !== undefined) {
    s.source = f.source;
    // What the ad platform reported is server-written; any other source a member can edit.
    if (f.source_provenance === undefined)
      s.sourceProvenance = f.source === 'platform_lead_ads' ? 'server_written' : 'member_editable';
  }
  if (f.source_channel !== undefined) s.sourceChannel = f.source_channel;
  if (f.source_detail !== undefined) s.sourceDetail = f.source_detail;
  if (f.source_provenance !== undefined) s.sourceProvenance = f.source_provenance;
}

export async function saveLead(ctx: WriteContext, lead: Entity<LeadState>): Promise<void> {
  await ctx.putLead(lead);
  await publishLead(ctx, lead);
}

export function emptyLead(at: string): LeadState {
  return {
    name: null,
    surname: null,
    email: null,
    company: null,
    phone: null,
    phoneStatus: 'missing',
    status: null,
    statusSetBy: null,
    archiveReason: null,
    archivedFromStatus: null,
    permissions: { doNotContact: false, emailOptOut: false, emailOptOutAt: null, whatsappConsent: null },
    mergedInto: null,
    transferredTo: null,
    transferredFrom: null,
    revivedAt: null,
    pipelineCleared: false,
    convertedAt: null,
    valueAtConversion: null,
    priority: null,
    tags: [],
    board: null,
    stage: null,
    assignees: null,
    estimatedValue: null,
    source: null,
    sourceChannel: null,
    sourceDetail: null,
    sourceProvenance: null,
    createdAt: at,
    originalCapture: null,
    internal: { score: null, language: null, lastViewedAt: null },
    activitySeq: 0,
  };
}

/** A lead id must be new: never in use and never removed (a record that comes back gets a new id). */
export async function assertNewLeadId(ctx: WriteContext, id: string): Promise<void> {
  if ((await ctx.tx.viewEntity('lead', id)) || (await ctx.tx.getRecord('lead', id))) {
    throw new WriteError(`lead ${id} already exists or was removed; use a new id`);
  }
}

export async function createLead(ctx: WriteContext, e: EventOf<'lead.created'>, at: string): Promise<void> {
  await ctx.team(e.team);
  await assertNewLeadId(ctx, e.lead);
  const s = emptyLead(at);
  applyFields(s, e);
  const actor = e.actor ?? 'unknown';
  let place: { stage: string; board: string } | null = null;
  if (e.stage) {
    const { board } = await ctx.stage(e.team, e.stage);
    if (e.board && e.board !== board.id) throw new WriteError(`stage ${e.stage} is not on board ${e.board}`);
    place = { stage: e.stage, board: board.id };
  } else if (e.board) {
    await ctx.viewInTeam('board', e.board, e.team);
  }
  const status = e.status ?? null;
  const assignees = e.assignees ? await ctx.members(e.team, e.assignees) : null;
  s.permissions = {
    doNotContact: e.do_not_contact ?? false,
    emailOptOut: e.email_opt_out ?? false,
    emailOptOutAt: e.email_opt_out ? at : null,
    whatsappConsent: e.whatsapp_consent ?? null,
  };
  s.originalCapture = e.capture ? buildOriginalCapture(e.capture, at) : null;
  const lead: Entity<LeadState> = { kind: 'lead', id: e.lead, team: e.team, parent: null, state: s };

  if (status !== null) {
    if (status === 'converted') {
      s.convertedAt = at;
      s.valueAtConversion = s.estimatedValue;
    }
    s.board = place?.board ?? e.board ?? null;
    s.stage = place?.stage ?? null;
    await moveStatus(ctx, lead, { type: 'status_changed', to: status, actor, at });
  } else {
    s.board = place?.board ?? e.board ?? null;
    s.stage = place?.stage ?? null;
  }
  // A lead record always has pipeline data; a client only when it was given some.
  s.assignees = assignees ?? (status !== null || place ? [] : null);
  if (place)
    await recordActivity(ctx, lead, { type: 'stage_changed', from: null, to: place }, { actor, occurredAt: at });
  if (assignees && assignees.length > 0) {
    await recordActivity(ctx, lead, { type: 'assignees_changed', from: [], to: assignees }, { actor, occurredAt: at });
  }
  await saveLead(ctx, lead);
  await publishFacets(ctx, lead);
}

export async function updateLead(ctx: WriteContext, e: EventOf<'lead.updated'>): Promise<void> {
  const lead = await ctx.lead(e.lead);
  applyFields(lead.state, e);
  await saveLead(ctx, lead);
}

export async function updateInternal(ctx: WriteContext, e: EventOf<'lead.internal_updated'>): Promise<void> {
  const lead = await ctx.lead(e.lead);
  const i = lead.state.internal;
  if (e.score !== undefined) i.score = e.score;
  if (e.language !== undefined) i.language = e.language;
  if (e.last_viewed_at !== undefined) i.lastViewedAt = e.last_viewed_at && new Date(e.last_viewed_at).toISOString();
  // Republished like any other change: the projection is unchanged, so no version and no feed item.
  await saveLead(ctx, lead);
}

export async function setContactPermissions(
  ctx: WriteContext,
  e: EventOf<'lead.contact_permissions'>,
  at: string,
): Promise<void> {
  const lead = await ctx.lead(e.lead);
  const p = lead.state.permissions;
  if (e.do_not_contact !== undefined) p.doNotContact = e.do_not_contact;
  if (e.email_opt_out !== undefined && e.email_opt_out !== p.emailOptOut) {
    p.emailOptOut = e.email_opt_out;
    p.emailOptOutAt = e.email_opt_out ? at : null;
  }
  if (e.whatsapp_consent !== undefined) p.whatsappConsent = e.whatsapp_consent;
  await saveLead(ctx, lead);
}

export async function setStatus(ctx: WriteContext, e: EventOf<'lead.status_set'>, at: string): Promise<void> {
  const lead = await ctx.lead(e.lead);
  const s = lead.state;
  if (e.status === 'archived') throw new WriteError(`lead ${e.lead}: archive with lead.archived (it needs a reason)`);
  if (e.status === 'converted') throw new WriteError(`lead ${e.lead}: convert with lead.converted`);
  if (s.status === 'archived') {
    throw new WriteError(`lead ${e.lead} is archived: reopen it with lead.unarchived or lead.revived`);
  }
  if (s.status === e.status) return;
  if (s.assignees === null && !s.pipelineCleared) s.assignees = [];
  await moveStatus(ctx, lead, { type: 'status_changed', to: e.status, actor: e.actor, at });
  await saveLead(ctx, lead);
}

/** Stored free text reads `other`; merge and transfer have their own operations. */
function archiveReason(reason: string): ArchiveReason {
  const known = (ARCHIVE_REASONS as readonly string[]).includes(reason) ? (reason as ArchiveReason) : 'other';
  if (known === 'merged' || known === 'family_transfer') {
    throw new WriteError(`archive reason ${known} is set by lead.merged or lead.transferred`);
  }
  return known;
}

export async function archive(ctx: WriteContext, e: EventOf<'lead.archived'>, at: string): Promise<void> {
  const lead = await ctx.lead(e.lead);
  if (lead.state.status === 'archived') throw new WriteError(`lead ${e.lead} is already archived`);
  await archiveLead(ctx, lead, archiveReason(e.reason), e.actor ?? 'unknown', at);
  await saveLead(ctx, lead);
}

async function reopen(
  ctx: WriteContext,
  e: EventOf<'lead.unarchived'> | EventOf<'lead.revived'>,
  at: string,
  type: 'unarchived' | 'revived',
): Promise<void> {
  const lead = await ctx.lead(e.lead);
  const s = lead.state;
  if (s.status !== 'archived') throw new WriteError(`lead ${e.lead} is not archived`);
  // A contact coming back starts over as new; the team reopens where the lead was archived from.
  const to = e.status ?? (type === 'revived' ? 'new' : (s.archivedFromStatus ?? 'new'));
  if (to === 'archived' || to === 'converted') throw new WriteError(`lead ${e.lead} cannot reopen as ${to}`);
  if (type === 'revived') s.revivedAt = at;
  await moveStatus(ctx, lead, { type, to, actor: e.actor ?? (type === 'revived' ? 'system' : 'unknown'), at });
  await saveLead(ctx, lead);
}

export const unarchive = (ctx: WriteContext, e: EventOf<'lead.unarchived'>, at: string) =>
  reopen(ctx, e, at, 'unarchived');
export const revive = (ctx: WriteContext, e: EventOf<'lead.revived'>, at: string) => reopen(ctx, e, at, 'revived');

export async function moveStage(ctx: WriteContext, e: EventOf<'lead.stage_moved'>, at: string): Promise<void> {
  const lead = await ctx.lead(e.lead);
  const s = lead.state;
  const { board } = await ctx.stage(lead.team as string, e.stage);
  if (s.stage === e.stage) return;
  const from = s.stage ? { stage: s.stage, board: s.board } : null;
  s.stage = e.stage;
  s.board = board.id;
  s.pipelineCleared = false;
  if (s.assignees === null) s.assignees = [];
  await recordActivity(
    ctx,
    lead,
    { type: 'stage_changed', from, to: { stage: e.stage, board: board.id } },
    { actor: e.actor ?? 'unknown', occurredAt: at },
  );
  await saveLead(ctx, lead);
}

export async function setAssignees(ctx: WriteContext, e: EventOf<'lead.assignees_set'>, at: string): Promise<void> {
  const lead = await ctx.lead(e.lead);
  const s = lead.state;
  const to = await ctx.members(lead.team as string, e.assignees);
  const from = s.assignees ?? [];
  if (s.assignees !== null && from.join() === to.join()) return;
  s.assignees = to;
  s.pipelineCleared = false;
  await recordActivity(
    ctx,
    lead,
    { type: 'assignees_changed', from, to },
    { actor: e.actor ?? 'unknown', occurredAt: at },
  );
  await saveLead(ctx, lead);
}

export async function convert(ctx: WriteContext, e: EventOf<'lead.converted'>, at: string): Promise<void> {
  const lead = await ctx.lead(e.lead);
  const s = lead.state;
  if (s.status === 'converted') throw new WriteError(`lead ${e.lead} is already converted`);
  const actor = e.actor ?? 'unknown';
  const value = e.value === undefined || e.value === null ? s.estimatedValue : e.value;
  const stageLeft = s.stage;
  const assigneesLeft = s.assignees ?? [];
  s.valueAtConversion = value;
  if (e.clear_pipeline) {
    s.board = null;
    s.stage = null;
    s.priority = null;
    s.assignees = null;
    s.estimatedValue = null;
    s.source = null;
    s.sourceDetail = null;
    s.sourceProvenance = null;
    s.pipelineCleared = true;
  }
  await moveStatus(ctx, lead, { type: 'status_changed', to: 'converted', actor, at, stage: stageLeft, value });
  s.convertedAt = at;
  if (e.clear_pipeline && assigneesLeft.length > 0) {
    await recordActivity(
      ctx,
      lead,
      { type: 'assignees_changed', from: assigneesLeft, to: [] },
      { actor, occurredAt: at, stage: stageLeft, value },
    );
  }
  await saveLead(ctx, lead);
}
