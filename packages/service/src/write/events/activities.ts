import { hash } from 'node:crypto';
import type { ActorKind } from '../../schemas/enums.js';
import type { Entity } from '../../store/store.js';
import type { LeadState } from '../types.js';
import type { WriteContext } from './context.js';
import { PENDING, type Projection, publish } from './publish.js';

// Activities record one status, stage or assignee transition each and never change once written.

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Derived from the lead and the activity's place in its history, so replaying events gives the same ids and
 * a lead's activities are found from its counter alone (no entity per activity is stored).
 */
export function activityId(lead: string, seq: number): string {
  // The one-shot digest: a Hash object per activity cost more than the digest itself.
  const digest = hash('sha256', `${lead}:${seq}`, 'buffer');
  let id = 'act_';
  for (let i = 0; i < 16; i++) id += ALPHABET[(digest[i] ?? 0) % 62];
  return id;
}

/** What an activity records, one variant per activity schema: its `type`, `from` and `to`. */
type TransitionOf<A> = A extends Projection<'activity'> ? Pick<A, 'type' | 'from' | 'to'> : never;
export type Transition = TransitionOf<Projection<'activity'>>;

/**
 * The transition's fields in the schema's key order whatever order the caller wrote them in (stored
 * JSON is compared as text); each branch narrows the variant so the projection keeps its type.
 */
function transitionFields(t: Transition): Transition {
  switch (t.type) {
    case 'stage_changed':
      return { type: t.type, from: t.from, to: t.to };
    case 'assignees_changed':
      return { type: t.type, from: t.from, to: t.to };
    default:
      return { type: t.type, from: t.from, to: t.to };
  }
}

export interface ActivityContext {
  actor: ActorKind;
  occurredAt: string;
  /** The stage to snapshot when it differs from the lead's current one (the stage left when pipeline data is cleared). */
  stage?: string | null;
  value?: number | null;
}

/** Writes one activity of `lead` (the caller saves the lead, whose activity counter moved). */
export async function recordActivity(
  ctx: WriteContext,
  lead: Entity<LeadState>,
  transition: Transition,
  c: ActivityContext,
): Promise<void> {
  const team = lead.team as string;
  const seq = lead.state.activitySeq + 1;
  lead.state.activitySeq = seq;
  const id = activityId(lead.id, seq);
  // A new counter value: no activity of this id exists (the lead is held by this transaction).
  ctx.tx.created('activity', id);
  const stageId = c.stage === undefined ? lead.state.stage : c.stage;
  const stage = stageId ? await ctx.findStage(team, stageId) : undefined;
  const projection: Projection<'activity'> = {
    id,
    object: 'activity',
    livemode: await ctx.livemode(team),
    team,
    lead: lead.id,
    occurred_at: c.occurredAt,
    actor_kind: c.actor,
    stage_snapshot: stageId && stage ? { stage: stageId, board: stage.board, name: stage.name } : null,
    value_snapshot: c.value === undefined ? lead.state.estimatedValue : c.value,
    ...PENDING,
    ...transitionFields(transition),
  };
  await publish(ctx.tx, ctx.clock, 'activity', id, team, projection, { lead: lead.id });
}
