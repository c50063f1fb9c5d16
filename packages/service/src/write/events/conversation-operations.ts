import { iso } from '../../clock.js';
import type { Entity } from '../../store/store.js';
import type { ConversationState, ErasedMessageState, MessageState } from '../types.js';
import type { WriteContext } from './context.js';
import type { EventOf } from './events.js';
import { refreshResponse } from './facets.js';
import { removeConversation } from './lead-removal.js';
import { publishConversation } from './publishers.js';
import { WriteError } from './write-error.js';

// Conversations and their messages. A message is metadata only (its text is dropped): it changes its
// conversation and the lead's response facet, never the lead.

async function setLead(ctx: WriteContext, conv: Entity<ConversationState>, lead: string | null): Promise<void> {
  if (lead !== null) await ctx.viewInTeam('lead', lead, conv.team as string);
  conv.state.lead = lead;
  conv.parent = lead;
}

export async function startConversation(
  ctx: WriteContext,
  e: EventOf<'conversation.started'>,
  at: string,
): Promise<void> {
  await ctx.team(e.team);
  if (
    (await ctx.tx.viewEntity('conversation', e.conversation)) ||
    (await ctx.tx.getRecord('conversation', e.conversation))
  ) {
    throw new WriteError(`conversation ${e.conversation} already exists or was removed; use a new id`);
  }
  const status = e.status ?? 'open';
  const conv: Entity<ConversationState> = {
    kind: 'conversation',
    id: e.conversation,
    team: e.team,
    parent: null,
    state: {
      lead: null,
      channel: e.channel,
      status,
      assignees: await ctx.members(e.team, e.assignees ?? []),
      startedAt: at,
      closedAt: status === 'closed' ? at : null,
      createdAt: at,
      messageSeq: 0,
    },
  };
  await setLead(ctx, conv, e.lead ?? null);
  await ctx.tx.putEntity(conv);
  await publishConversation(ctx, conv);
  await refreshResponse(ctx, conv.state.lead);
}

export async function updateConversation(
  ctx: WriteContext,
  e: EventOf<'conversation.updated'>,
  at: string,
): Promise<void> {
  const conv = await ctx.need<ConversationState>('conversation', e.conversation);
  const s = conv.state;
  const before = s.lead;
  if (e.lead !== undefined) await setLead(ctx, conv, e.lead);
  if (e.assignees !== undefined) s.assignees = await ctx.members(conv.team as string, e.assignees);
  if (e.status !== undefined && e.status !== s.status) {
    s.status = e.status;
    s.closedAt = e.status === 'closed' ? at : null;
  }
  await ctx.tx.putEntity(conv);
  await publishConversation(ctx, conv);
  if (before !== s.lead) {
    await refreshResponse(ctx, before);
    await refreshResponse(ctx, s.lead);
  }
}

export async function removeConversationEvent(
  ctx: WriteContext,
  e: EventOf<'conversation.erased'> | EventOf<'conversation.deleted'>,
): Promise<void> {
  const conv = await ctx.need<ConversationState>('conversation', e.conversation);
  await removeConversation(ctx, conv, e.type === 'conversation.erased' ? 'erased' : 'deleted');
  await refreshResponse(ctx, conv.state.lead);
}

async function afterMessage(ctx: WriteContext, conversationId: string): Promise<void> {
  const conv = await ctx.view<ConversationState>('conversation', conversationId);
  await publishConversation(ctx, conv);
  await refreshResponse(ctx, conv.state.lead);
}

export async function recordMessage(ctx: WriteContext, e: EventOf<'message.recorded'>, at: string): Promise<void> {
  const conv = await ctx.need<ConversationState>('conversation', e.conversation);
  if (await ctx.tx.viewEntity('message', e.message)) throw new WriteError(`message ${e.message} exists`);
  // A restore's replay erases the id again (write/events/erasure-replay.ts): a message that comes back needs a new one.
  if (await ctx.tx.viewEntity('erased_message', e.message))
    throw new WriteError(`message ${e.message} was erased; use a new id`);
  conv.state.messageSeq += 1;
  const state: MessageState = {
    direction: e.direction,
    purpose: e.purpose ?? null,
    failed: e.failed ?? false,
    imported: e.imported ?? false,
    visitorTurn: e.visitor_turn ?? false,
    at,
    seq: conv.state.messageSeq,
    receipt: null,
  };
  await ctx.tx.putEntity(conv);
  await ctx.tx.putEntity({ kind: 'message', id: e.message, team: conv.team, parent: conv.id, state });
  await afterMessage(ctx, conv.id);
}

export async function messageReceipt(ctx: WriteContext, e: EventOf<'message.receipt'>): Promise<void> {
  const message = await ctx.need<MessageState>('message', e.message);
  const conv = await ctx.view<ConversationState>('conversation', message.parent as string);
  if (conv.state.channel !== 'whatsapp') throw new WriteError(`message ${e.message} is not a WhatsApp message`);
  if (message.state.direction !== 'outbound') throw new WriteError(`message ${e.message} was not sent to the customer`);
  message.state.receipt = e.status;
  // A failed receipt means the message never reached the customer.
  if (e.status === 'failed') message.state.failed = true;
  await ctx.tx.putEntity(message);
  await afterMessage(ctx, conv.id);
}

export async function eraseMessage(ctx: WriteContext, e: EventOf<'message.erased'>): Promise<void> {
  const message = await ctx.need<MessageState>('message', e.message);
  await ctx.tx.deleteEntity('message', message.id);
  // Ids and time only, kept like a record's tombstone: `admin erasures export` lists it for a restore.
  await ctx.tx.putEntity<ErasedMessageState>({
    kind: 'erased_message',
    id: message.id,
    team: message.team,
    parent: message.parent,
    state: { erasedAt: iso(ctx.clock.now()) },
  });
  await afterMessage(ctx, message.parent as string);
}
