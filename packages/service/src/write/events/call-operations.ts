import type { Entity } from '../../store/store.js';
import type { CallState } from '../types.js';
import type { WriteContext } from './context.js';
import type { EventOf } from './events.js';
import { refreshResponse } from './facets.js';
import { removeCall } from './lead-removal.js';
import { publishCall } from './publishers.js';
import { WriteError } from './write-error.js';

// Calls. Transcripts, summaries and recordings may arrive on the events and are dropped.

type CallFields = Omit<EventOf<'call.updated'>, 'type' | 'at' | 'call'>;

async function applyFields(ctx: WriteContext, call: Entity<CallState>, f: CallFields): Promise<void> {
  const s = call.state;
  if (f.lead !== undefined) {
    if (f.lead !== null) await ctx.viewInTeam('lead', f.lead, call.team as string);
    s.lead = f.lead;
    call.parent = f.lead;
  }
  if (f.direction !== undefined) s.direction = f.direction;
  if (f.started_at !== undefined && f.started_at !== null) s.startedAt = new Date(f.started_at).toISOString();
  if (f.duration_seconds !== undefined) s.durationSeconds = f.duration_seconds;
  if (f.live !== undefined) s.live = f.live;
  if (f.carrier_result !== undefined) s.carrierResult = f.carrier_result;
  if (f.verdict !== undefined) s.verdict = f.verdict;
}

export async function recordCall(ctx: WriteContext, e: EventOf<'call.recorded'>, at: string): Promise<void> {
  await ctx.team(e.team);
  if ((await ctx.tx.viewEntity('call', e.call)) || (await ctx.tx.getRecord('call', e.call))) {
    throw new WriteError(`call ${e.call} already exists or was removed; use a new id`);
  }
  const call: Entity<CallState> = {
    kind: 'call',
    id: e.call,
    team: e.team,
    parent: null,
    state: {
      lead: null,
      line: e.line,
      direction: null,
      // When the provider gives no start, the call started when it was recorded.
      startedAt: at,
      durationSeconds: null,
      live: false,
      carrierResult: null,
      verdict: null,
    },
  };
  await applyFields(ctx, call, e);
  await ctx.tx.putEntity(call);
  await publishCall(ctx, call);
  await refreshResponse(ctx, call.state.lead);
}

export async function updateCall(ctx: WriteContext, e: EventOf<'call.updated'>): Promise<void> {
  const call = await ctx.need<CallState>('call', e.call);
  const before = call.state.lead;
  await applyFields(ctx, call, e);
  await ctx.tx.putEntity(call);
  await publishCall(ctx, call);
  await refreshResponse(ctx, call.state.lead);
  if (before !== call.state.lead) await refreshResponse(ctx, before);
}

export async function removeCallEvent(
  ctx: WriteContext,
  e: EventOf<'call.erased'> | EventOf<'call.deleted'>,
): Promise<void> {
  const call = await ctx.need<CallState>('call', e.call);
  await removeCall(ctx, call, e.type === 'call.erased' ? 'erased' : 'deleted');
  await refreshResponse(ctx, call.state.lead);
}
