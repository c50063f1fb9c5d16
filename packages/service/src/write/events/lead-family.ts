import type { Entity } from '../../store/store.js';
import type { LeadState, SubmissionState } from '../types.js';
import type { WriteContext } from './context.js';
import type { EventOf } from './events.js';
import { buildOriginalCapture, publishAttribution, publishFacets } from './facets.js';
import { assertNewLeadId, emptyLead, saveLead } from './lead-operations.js';
import { archiveLead, moveStatus, stricterPermissions } from './lead-state.js';
import { WriteError } from './write-error.js';

// Operations between leads (merge, transfer) and the ad submissions behind the attribution facet.

export async function merge(ctx: WriteContext, e: EventOf<'lead.merged'>, at: string): Promise<void> {
  if (e.kept === e.duplicate) throw new WriteError(`lead ${e.kept} cannot be merged into itself`);
  const kept = await ctx.lead(e.kept);
  const duplicate = await ctx.lead(e.duplicate);
  if (kept.team !== duplicate.team)
    throw new WriteError(`leads ${e.kept} and ${e.duplicate} belong to different teams`);
  if (kept.state.mergedInto) throw new WriteError(`lead ${e.kept} was itself merged into another lead`);
  if (duplicate.state.mergedInto) throw new WriteError(`lead ${e.duplicate} is already merged`);
  await archiveLead(ctx, duplicate, 'merged', e.actor ?? 'unknown', at);
  duplicate.state.mergedInto = kept.id;
  duplicate.parent = kept.id;
  kept.state.permissions = stricterPermissions(kept.state.permissions, duplicate.state.permissions);
  await saveLead(ctx, duplicate);
  await saveLead(ctx, kept);
}

export async function transfer(ctx: WriteContext, e: EventOf<'lead.transferred'>, at: string): Promise<void> {
  const original = await ctx.lead(e.lead);
  const from = original.team as string;
  if (e.to_team === from) throw new WriteError(`lead ${e.lead} is already in team ${from}`);
  if (original.state.transferredTo) throw new WriteError(`lead ${e.lead} was already transferred`);
  const [source, destination] = [await ctx.team(from), await ctx.team(e.to_team)];
  if (source.organization === null || source.organization !== destination.organization) {
    throw new WriteError(`team ${e.to_team} is not in the organization of team ${from}`);
  }
  // Every example key reads an example team: live personal data must never reach one, nor example data a live one.
  if (source.livemode !== destination.livemode) {
    const mode = (live: boolean) => (live ? 'a live team' : 'an example team');
    throw new WriteError(
      `team ${e.to_team} is ${mode(destination.livemode)} and team ${from} ${mode(source.livemode)}: a transfer never links live and example teams`,
    );
  }
  const actor = e.actor ?? 'unknown';
  if (e.new_lead !== null) {
    await assertNewLeadId(ctx, e.new_lead);
    const o = original.state;
    const s = emptyLead(at);
    Object.assign(s, {
      name: o.name,
      surname: o.surname,
      email: o.email,
      company: o.company,
      phone: o.phone,
      phoneStatus: o.phoneStatus,
      permissions: { ...o.permissions },
      // Created by the service from the other team's lead.
      source: 'api',
      sourceChannel: o.sourceChannel,
      sourceDetail: 'family_handoff',
      sourceProvenance: 'server_written',
      transferredFrom: { team: from, lead: original.id },
      assignees: o.status === null ? null : [],
    } satisfies Partial<LeadState>);
    s.originalCapture = buildOriginalCapture({ source: 'api', source_channel: o.sourceChannel }, at, {
      team: from,
      lead: original.id,
    });
    const created: Entity<LeadState> = { kind: 'lead', id: e.new_lead, team: e.to_team, parent: null, state: s };
    if (o.status !== null) await moveStatus(ctx, created, { type: 'status_changed', to: 'new', actor, at });
    await saveLead(ctx, created);
    await publishFacets(ctx, created);
  }
  await archiveLead(ctx, original, 'family_transfer', actor, at);
  original.state.transferredTo = { team: e.to_team, lead: e.new_lead };
  await saveLead(ctx, original);
}

export async function submissionReceived(
  ctx: WriteContext,
  e: EventOf<'submission.received'>,
  at: string,
): Promise<void> {
  const lead = await ctx.lead(e.lead);
  if (await ctx.tx.viewEntity('submission', e.submission)) throw new WriteError(`submission ${e.submission} exists`);
  const seq = (await ctx.tx.findEntities('submission', { parent: lead.id })).length + 1;
  const group = (g: { id?: string | null; name?: string | null } | undefined) =>
    g ? { id: g.id ?? null, name: g.name ?? null } : null;
  const state: SubmissionState = {
    receivedAt: at,
    submittedAt: e.submitted_at ? new Date(e.submitted_at).toISOString() : null,
    externalProvider: e.external_provider ?? null,
    campaign: group(e.campaign),
    ad: group(e.ad),
    adSet: group(e.ad_set),
    form: group(e.form),
    deleted: false,
    seq,
  };
  await ctx.tx.putEntity({ kind: 'submission', id: e.submission, team: lead.team, parent: lead.id, state });
  await publishAttribution(ctx, lead);
}

export async function submissionDeleted(ctx: WriteContext, e: EventOf<'submission.deleted'>): Promise<void> {
  const submission = await ctx.need<SubmissionState>('submission', e.submission);
  if (submission.state.deleted) return;
  submission.state.deleted = true;
  await ctx.tx.putEntity(submission);
  // An older submission can show again.
  if (submission.parent) await publishAttribution(ctx, await ctx.lead(submission.parent));
}
