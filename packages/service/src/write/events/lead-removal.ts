import type { RemovalReason } from '../../schemas/enums.js';
import type { Entity } from '../../store/store.js';
import type { BookingState, CallState, ConversationState, LeadState } from '../types.js';
import { activityId } from './activities.js';
import type { WriteContext } from './context.js';
import { removeRecord } from './publish.js';
import { publishBooking, publishCall, publishConversation, publishLead } from './publishers.js';

// Removals and their cascades, per the spec's "Which operation emits which item" and "States and
// transitions" tables. Removed entities are deleted: nothing of a removed person stays behind.

export async function removeCall(ctx: WriteContext, call: Entity<CallState>, reason: RemovalReason): Promise<void> {
  await removeRecord(ctx.tx, ctx.clock, 'call', call.id, call.team as string, reason);
  await ctx.tx.deleteEntity('call', call.id);
}

export async function removeConversation(
  ctx: WriteContext,
  conv: Entity<ConversationState>,
  reason: RemovalReason,
): Promise<void> {
  await removeRecord(ctx.tx, ctx.clock, 'conversation', conv.id, conv.team as string, reason);
  for (const m of await ctx.tx.findEntities('message', { parent: conv.id })) await ctx.tx.deleteEntity('message', m.id);
  await ctx.tx.deleteEntity('conversation', conv.id);
}

/**
 * Erasure removes the lead with its calls, conversations and merged duplicates (each its own
 * removal); any other removal keeps calls and conversations with `lead` null. Both keep bookings
 * with `lead` null and remove the facets and activities.
 */
export async function removeLead(ctx: WriteContext, lead: Entity<LeadState>, reason: RemovalReason): Promise<void> {
  const team = lead.team as string;
  const tx = ctx.tx;

  for (const dup of await tx.findEntities<LeadState>('lead', { parent: lead.id })) {
    if (reason === 'erased') {
      await removeLead(ctx, dup, 'erased');
    } else {
      // merged_into is null once the kept lead no longer exists.
      dup.state.mergedInto = null;
      dup.parent = null;
      await tx.putEntity(dup);
      await publishLead(ctx, dup);
    }
  }
  for (const call of await tx.findEntities<CallState>('call', { parent: lead.id })) {
    if (reason === 'erased') await removeCall(ctx, call, 'erased');
    else await unlink(ctx, call, publishCall);
  }
  for (const conv of await tx.findEntities<ConversationState>('conversation', { parent: lead.id })) {
    if (reason === 'erased') await removeConversation(ctx, conv, 'erased');
    else await unlink(ctx, conv, publishConversation);
  }
  for (const booking of await tx.findEntities<BookingState>('booking', { parent: lead.id })) {
    await unlink(ctx, booking, publishBooking);
  }
  // A lead's activities are the ids of its counter's values, oldest first (activities.ts).
  for (let seq = 1; seq <= lead.state.activitySeq; seq++) {
    await removeRecord(tx, ctx.clock, 'activity', activityId(lead.id, seq), team, reason);
  }
  for (const submission of await tx.findEntities('submission', { parent: lead.id })) {
    await tx.deleteEntity('submission', submission.id);
  }
  await removeRecord(tx, ctx.clock, 'lead_attribution', lead.id, team, reason);
  await removeRecord(tx, ctx.clock, 'lead_response', lead.id, team, reason);
  await removeRecord(tx, ctx.clock, 'lead', lead.id, team, reason);
  await tx.deleteEntity('lead', lead.id);

  // The original of a transfer can no longer name this lead.
  const origin = lead.state.transferredFrom;
  const original = origin ? await tx.getEntity<LeadState>('lead', origin.lead) : undefined;
  if (original?.state.transferredTo?.lead === lead.id) {
    original.state.transferredTo = { team: original.state.transferredTo.team, lead: null };
    await tx.putEntity(original);
    await publishLead(ctx, original);
  }
}

async function unlink<S extends { lead: string | null }>(
  ctx: WriteContext,
  entity: Entity<S>,
  republish: (ctx: WriteContext, e: Entity<S>) => Promise<boolean>,
): Promise<void> {
  entity.state.lead = null;
  entity.parent = null;
  await ctx.tx.putEntity(entity);
  await republish(ctx, entity);
}
