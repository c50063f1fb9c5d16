import type { Entity } from '../../store/store.js';
import type { BookingServiceState, BookingState } from '../types.js';
import type { WriteContext } from './context.js';
import type { EventOf } from './events.js';
import { removeRecord } from './publish.js';
import { publishBooking } from './publishers.js';
import { WriteError } from './write-error.js';

const time = (t: string) => new Date(t).toISOString();

function checkTimes(s: BookingState, id: string): void {
  if (s.endsAt < s.startsAt) throw new WriteError(`booking ${id} ends before it starts`);
}

export async function createBooking(ctx: WriteContext, e: EventOf<'booking.created'>, at: string): Promise<void> {
  await ctx.team(e.team);
  if ((await ctx.tx.viewEntity('booking', e.booking)) || (await ctx.tx.getRecord('booking', e.booking))) {
    throw new WriteError(`booking ${e.booking} already exists or was removed; use a new id`);
  }
  const service = await ctx.viewInTeam<BookingServiceState>('booking_service', e.service, e.team);
  if (service.state.deleted) throw new WriteError(`bookable service ${e.service} is deleted`);
  const lead = e.lead ?? null;
  if (lead !== null) await ctx.viewInTeam('lead', lead, e.team);
  const status = e.status ?? 'scheduled';
  const booking: Entity<BookingState> = {
    kind: 'booking',
    id: e.booking,
    team: e.team,
    parent: lead,
    state: {
      lead,
      service: e.service,
      status,
      startsAt: time(e.starts_at),
      endsAt: time(e.ends_at),
      assignees: await ctx.members(e.team, e.assignees ?? []),
      cancelledAt: status === 'cancelled' ? at : null,
      createdAt: at,
    },
  };
  checkTimes(booking.state, e.booking);
  await ctx.tx.putEntity(booking);
  await publishBooking(ctx, booking);
}

export async function updateBooking(ctx: WriteContext, e: EventOf<'booking.updated'>, at: string): Promise<void> {
  const booking = await ctx.need<BookingState>('booking', e.booking);
  const s = booking.state;
  if (e.starts_at !== undefined) s.startsAt = time(e.starts_at);
  if (e.ends_at !== undefined) s.endsAt = time(e.ends_at);
  if (e.assignees !== undefined) s.assignees = await ctx.members(booking.team as string, e.assignees);
  if (e.status !== undefined && e.status !== s.status) {
    s.status = e.status;
    s.cancelledAt = e.status === 'cancelled' ? at : null;
  }
  checkTimes(s, e.booking);
  await ctx.tx.putEntity(booking);
  await publishBooking(ctx, booking);
}

export async function deleteBooking(ctx: WriteContext, e: EventOf<'booking.deleted'>): Promise<void> {
  const booking = await ctx.need<BookingState>('booking', e.booking);
  await removeRecord(ctx.tx, ctx.clock, 'booking', booking.id, booking.team as string, 'deleted');
  await ctx.tx.deleteEntity('booking', booking.id);
}
