import type { ActorKind, LeadStatus, StatusActivityType } from '../../schemas/enums.js';
import type { Entity } from '../../store/store.js';
import type { LeadState } from '../types.js';
import { recordActivity } from './activities.js';
import type { WriteContext } from './context.js';

// Status moves shared by every operation that changes a lead's status, so the fields that depend on
// the status (archive fields, converted_at, status_set_by) and the activity stay consistent.

export interface StatusMove {
  type: StatusActivityType;
  to: LeadStatus;
  actor: ActorKind;
  at: string;
  /** Stage for the activity's snapshot when it is not the lead's current one. */
  stage?: string | null;
  value?: number | null;
}

/** Moves the lead to a status and records the activity; the caller sets the fields of its own operation. */
export async function moveStatus(ctx: WriteContext, lead: Entity<LeadState>, move: StatusMove): Promise<void> {
  const s = lead.state;
  const from = s.status;
  s.status = move.to;
  s.statusSetBy = move.actor;
  if (move.to !== 'archived') {
    s.archiveReason = null;
    s.archivedFromStatus = null;
  }
  if (move.to !== 'converted') s.convertedAt = null;
  await recordActivity(
    ctx,
    lead,
    { type: move.type, from, to: move.to },
    {
      actor: move.actor,
      occurredAt: move.at,
      ...(move.stage !== undefined ? { stage: move.stage } : {}),
      ...(move.value !== undefined ? { value: move.value } : {}),
    },
  );
}

/** Archives a lead (remembering the status it left); an already archived lead only changes its reason. */
export async function archiveLead(
  ctx: WriteContext,
  lead: Entity<LeadState>,
  reason: NonNullable<LeadState['archiveReason']>,
  actor: ActorKind,
  at: string,
): Promise<void> {
  const s = lead.state;
  if (s.status !== 'archived') {
    const from = s.status;
    await moveStatus(ctx, lead, { type: 'archived', to: 'archived', actor, at });
    s.archivedFromStatus = from;
  }
  s.archiveReason = reason;
}

/**
 * The stricter of two sets of contact permissions (for the lead kept by a merge): a merge never gains a
 * permission. `do_not_contact` and `email_opt_out`: true wins. `whatsapp_consent`: false wins, then null
 * (nobody recorded an answer, which is never consent); true only when both leads consented.
 */
export function stricterPermissions(
  a: LeadState['permissions'],
  b: LeadState['permissions'],
): LeadState['permissions'] {
  const optOutTimes = [a, b].filter((p) => p.emailOptOut && p.emailOptOutAt).map((p) => p.emailOptOutAt as string);
  const consent = (x: boolean | null, y: boolean | null) =>
    x === false || y === false ? false : x === true && y === true ? true : null;
  return {
    doNotContact: a.doNotContact || b.doNotContact,
    emailOptOut: a.emailOptOut || b.emailOptOut,
    emailOptOutAt: a.emailOptOut || b.emailOptOut ? (optOutTimes.sort()[0] ?? null) : null,
    whatsappConsent: consent(a.whatsappConsent, b.whatsappConsent),
  };
}
