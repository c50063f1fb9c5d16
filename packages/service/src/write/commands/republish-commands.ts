import { iso } from '../../clock.js';
import type { RecordKind } from '../../schemas/enums.js';
import type { Entity, EntityKind, WriteTx } from '../../store/store.js';
import { DEFAULT_CRM_OPTIONS, WriteContext } from '../events/context.js';
import { publishAttribution, publishResponse } from '../events/facets.js';
import {
  publishBoard,
  publishBooking,
  publishCall,
  publishConversation,
  publishLead,
  publishMember,
  publishService,
  publishTeam,
} from '../events/publishers.js';
import type {
  BoardState,
  BookingServiceState,
  BookingState,
  CallState,
  ConversationState,
  LeadState,
  MemberState,
  TeamState,
} from '../types.js';

// The writes of data migrations (write/commands/data-migrations.ts; entries of write/commands/commands.ts): a chunk of
// records projected again from their entities' state, and a step recorded as applied. Both are
// idempotent: a record whose projection is already stored writes nothing, so a retried transaction or a
// resumed step never adds a version.

/**
 * How each record kind is projected again from its entity: the entity it is built from (same id) and its
 * publisher. Activities are not here: their projection comes from the event that wrote them, not from
 * state kept after it.
 */
const REPUBLISHERS = {
  lead: { entity: 'lead', publish: (ctx, e) => publishLead(ctx, e as Entity<LeadState>) },
  lead_attribution: { entity: 'lead', publish: (ctx, e) => publishAttribution(ctx, e as Entity<LeadState>) },
  lead_response: { entity: 'lead', publish: (ctx, e) => publishResponse(ctx, e as Entity<LeadState>) },
  board: { entity: 'board', publish: (ctx, e) => publishBoard(ctx, e as Entity<BoardState>) },
  call: { entity: 'call', publish: (ctx, e) => publishCall(ctx, e as Entity<CallState>) },
  conversation: {
    entity: 'conversation',
    publish: (ctx, e) => publishConversation(ctx, e as Entity<ConversationState>),
  },
  booking: { entity: 'booking', publish: (ctx, e) => publishBooking(ctx, e as Entity<BookingState>) },
  team: { entity: 'team', publish: (ctx, e) => publishTeam(ctx, e.id, e.state as TeamState) },
  member: { entity: 'member', publish: (ctx, e) => publishMember(ctx, e as Entity<MemberState>) },
  booking_service: {
    entity: 'booking_service',
    publish: (ctx, e) => publishService(ctx, e as Entity<BookingServiceState>),
  },
} satisfies Partial<Record<RecordKind, Republisher>>;

interface Republisher {
  entity: EntityKind;
  publish: (ctx: WriteContext, entity: Entity<unknown>) => Promise<unknown>;
}

/** The record kinds a data migration can project again. */
export type RepublishKind = keyof typeof REPUBLISHERS;

/** The entity kind a record kind is projected from. */
export const sourceOf = (kind: RepublishKind): EntityKind => REPUBLISHERS[kind].entity;

/**
 * Projects the live records of these ids again through the kind's publisher; returns the ids that got a
 * new version. A record never written (a facet capture has not prepared yet), removed, or without its
 * entity is left alone: republishing only refreshes what is already exported.
 */
export async function republishRecords(
  tx: WriteTx,
  input: { kind: RepublishKind; ids: string[]; now: number },
): Promise<string[]> {
  // Every record of the chunk is stamped with the time drawn for it, the same on a retry.
  const ctx = new WriteContext(tx, { now: () => input.now }, DEFAULT_CRM_OPTIONS);
  const { entity: entityKind, publish } = REPUBLISHERS[input.kind];
  // The chunk's rows in one read where the store can (PostgreSQL), rather than two round trips a record.
  await ctx.tx.prefetch({
    entities: input.ids.map((id) => ({ kind: entityKind, id })),
    records: input.ids.map((id) => ({ kind: input.kind, id })),
  });
  const changed: string[] = [];
  for (const id of input.ids) {
    const before = await ctx.tx.current(input.kind, id);
    if (!before || before.removed) continue;
    const entity = await ctx.tx.getEntity(entityKind, id);
    if (!entity) continue;
    await publish(ctx, entity);
    if ((await ctx.tx.current(input.kind, id))?.version !== before.version) changed.push(id);
  }
  return changed;
}

/** The meta key recording that a data migration step was applied. */
export const dataStepKey = (name: string): string => `data_migration:${name}`;

/** Records a step as applied (when it first was); false when it already was. */
export async function markDataStep(tx: WriteTx, input: { name: string; now: number }): Promise<boolean> {
  const key = dataStepKey(input.name);
  if ((await tx.getMeta(key)) !== undefined) return false;
  await tx.setMeta(key, iso(input.now));
  return true;
}
