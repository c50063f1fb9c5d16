import type { OriginalCapture } from '../../schemas/records.js';
import type { Entity } from '../../store/store.js';
import type { CallState, ConversationState, LeadState, MessageState, SubmissionState } from '../types.js';
import { callOutcome } from './call-outcome.js';
import type { WriteContext } from './context.js';
import type { CaptureInput } from './event-fields.js';
import { PENDING, type Projection, publish } from './publish.js';

// The two lead facets. Each has its own version, so a new message changes the response facet and
// never the lead. They only read what they list, so they take the cached entities without copies.

type Named = { id?: string | null; name?: string | null } | undefined;
const provenanced = (value: string | null | undefined) => ({
  value: value ?? null,
  provenance: value ? 'provider' : 'not_captured',
});
const idName = (g: Named) => ({ id: provenanced(g?.id), name: provenanced(g?.name) });
const idOnly = (g: { id?: string | null } | undefined) => ({ id: provenanced(g?.id) });
/** A copy of a string map without blank values (never an empty string); null when none is left. */
function withoutBlanks(map: Record<string, string> | null | undefined): Record<string, string> | null {
  const kept = Object.entries(map ?? {}).filter(([, value]) => value.trim() !== '');
  return kept.length > 0 ? Object.fromEntries(kept) : null;
}

/** How a lead first entered the CRM, built once when it is created and never changed after. */
export function buildOriginalCapture(
  c: CaptureInput,
  capturedAt: string,
  familyOrigin: { team: string; lead: string } | null = null,
): OriginalCapture {
  const time = (t: string | null | undefined) => (t ? new Date(t).toISOString() : null);
  return {
    capture: 'at_creation',
    captured_at: capturedAt,
    received_at: time(c.received_at),
    submitted_at: time(c.submitted_at),
    source: c.source ?? null,
    source_hint: c.source_hint ?? null,
    source_channel: c.source_channel ?? null,
    external_provider: c.external_provider ?? null,
    origin: c.origin ?? null,
    campaign: idName(c.campaign),
    ad: idName(c.ad),
    ad_set: idName(c.ad_set),
    form: idName(c.form),
    page: idName(c.page),
    ad_group: idOnly(c.ad_group),
    creative: idOnly(c.creative),
    asset_group: idOnly(c.asset_group),
    click_network: provenanced(c.click_network),
    audience: { value: c.audience ?? null, missing_reason: c.audience ? null : 'unsupported' },
    utm: withoutBlanks(c.utm),
    ad_referral: withoutBlanks(c.ad_referral),
    family_origin: familyOrigin ? { ...familyOrigin } : null,
  };
}

/** Newest submission first by arrival, the later-recorded one first on a tie. */
function newestSubmission(subs: Entity<SubmissionState>[]): Entity<SubmissionState> | undefined {
  let best: Entity<SubmissionState> | undefined;
  for (const s of subs) {
    if (s.state.deleted) continue;
    const b = best?.state;
    if (!b || s.state.receivedAt > b.receivedAt || (s.state.receivedAt === b.receivedAt && s.state.seq > b.seq))
      best = s;
  }
  return best;
}

export async function publishAttribution(ctx: WriteContext, lead: Entity<LeadState>): Promise<boolean> {
  const team = lead.team as string;
  const latest = newestSubmission(await ctx.tx.viewEntities<SubmissionState>('submission', { parent: lead.id }))?.state;
  const group = (g: { id: string | null; name: string | null } | null) => (g ? { id: g.id, name: g.name } : null);
  const projection: Projection<'lead_attribution'> = {
    id: lead.id,
    object: 'lead_attribution',
    livemode: await ctx.livemode(team),
    team,
    original_capture: lead.state.originalCapture,
    original_capture_missing_reason: lead.state.originalCapture ? null : 'not_captured',
    latest_submission: latest
      ? {
          received_at: latest.receivedAt,
          submitted_at: latest.submittedAt,
          external_provider: latest.externalProvider,
          campaign: group(latest.campaign),
          ad: group(latest.ad),
          ad_set: group(latest.adSet),
          form: group(latest.form),
        }
      : null,
    latest_submission_missing_reason: latest ? null : 'not_captured',
    ...PENDING,
  };
  return publish(ctx.tx, ctx.clock, 'lead_attribution', lead.id, team, projection, { lead: lead.id });
}

const max = (a: string | null, b: string | null) => (b !== null && (a === null || b > a) ? b : a);

/** Channels whose messages carry delivery receipts; every other channel is reported as without delivery data. */
const CHANNELS_WITH_DELIVERY_DATA = new Set(['whatsapp']);

export async function publishResponse(ctx: WriteContext, lead: Entity<LeadState>): Promise<boolean> {
  const team = lead.team as string;
  const conversations = await ctx.tx.viewEntities<ConversationState>('conversation', { parent: lead.id });
  const messages: { m: MessageState; channel: string }[] = [];
  for (const c of conversations) {
    for (const m of await ctx.tx.viewEntities<MessageState>('message', { parent: c.id })) {
      messages.push({ m: m.state, channel: c.state.channel });
    }
  }
  // Newest first; the facet reads a bounded window and says so when it had to cut.
  messages.sort((a, b) => (a.m.at === b.m.at ? b.m.seq - a.m.seq : a.m.at < b.m.at ? 1 : -1));
  const truncated = messages.length > ctx.options.responseMessageWindow;
  const window = messages.slice(0, ctx.options.responseMessageWindow);

  let lastInbound: string | null = null;
  let lastOutbound: string | null = null;
  let lastReply: string | null = null;
  let whatsapp: MessageState | undefined;
  for (const { m, channel } of window) {
    if (m.direction === 'inbound') {
      if (m.visitorTurn || (m.imported && channel === 'whatsapp')) continue;
      lastInbound = max(lastInbound, m.at);
      continue;
    }
    if (channel === 'whatsapp' && !whatsapp) whatsapp = m;
    if (m.failed) continue;
    lastOutbound = max(lastOutbound, m.at);
    if (!m.imported && (m.purpose === 'reply' || m.purpose === null)) lastReply = max(lastReply, m.at);
  }

  const calls = await ctx.tx.viewEntities<CallState>('call', { parent: lead.id });
  let lastAnsweredCall: string | null = null;
  for (const call of calls) {
    const { outcome } = callOutcome(call.state, ctx.options.answeredCallFloorSeconds);
    if (outcome === 'answered_human' || outcome === 'answered_ai')
      lastAnsweredCall = max(lastAnsweredCall, call.state.startedAt);
  }
  const channels = new Set(
    conversations.map((c) => c.state.channel).filter((ch) => !CHANNELS_WITH_DELIVERY_DATA.has(ch)),
  );

  const projection: Projection<'lead_response'> = {
    id: lead.id,
    object: 'lead_response',
    livemode: await ctx.livemode(team),
    team,
    last_inbound_at: lastInbound,
    last_outbound_at: lastOutbound,
    awaiting_reply: lastInbound !== null && (lastReply === null || lastInbound > lastReply),
    last_answered_call_at: lastAnsweredCall,
    last_whatsapp_delivery_status: whatsapp?.receipt ?? null,
    coverage: {
      conversations: conversations.length,
      calls: calls.length,
      channels_without_delivery_data: [...channels].sort(),
      truncated,
    },
    ...PENDING,
  };
  return publish(ctx.tx, ctx.clock, 'lead_response', lead.id, team, projection, { lead: lead.id });
}

/**
 * Publishes both facets of a lead: the one place a new lead's facets are written, by the CRM's events
 * and by capture. `missing` publishes only a facet the lead has no record of yet (capture prepares a
 * team's leads that way and leaves a published facet as it is).
 */
export async function publishFacets(
  ctx: WriteContext,
  lead: Entity<LeadState>,
  which: 'both' | 'missing' = 'both',
): Promise<void> {
  if (which === 'both' || !(await ctx.tx.getRecord('lead_attribution', lead.id))) await publishAttribution(ctx, lead);
  if (which === 'both' || !(await ctx.tx.getRecord('lead_response', lead.id))) await publishResponse(ctx, lead);
}

/** Republishes the response facet of a lead when there is one (calls and conversations may be unlinked). */
export async function refreshResponse(ctx: WriteContext, leadId: string | null): Promise<void> {
  if (leadId === null) return;
  const lead = await ctx.tx.viewEntity<LeadState>('lead', leadId);
  if (lead) await publishResponse(ctx, lead);
}
