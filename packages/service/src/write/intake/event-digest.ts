import { createHash } from 'node:crypto';
import type { CrmEvent } from '../events/events.js';

// An event's content digest: what tells a re-sent event (same id, same content: a duplicate) from an id
// used again for something else (a conflict). Taken over the stored form (content fields dropped, times
// in UTC, blank text as null) with keys sorted, so spacing, key order and time zones do not count.

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The event without its `id`: the form the write side applies and the digest covers. */
export function withoutId(event: CrmEvent): CrmEvent {
  if (!('id' in event)) return event;
  const { id: _id, ...rest } = event;
  return rest as CrmEvent;
}

/** Hex SHA-256 of the event's canonical stored form, `id` left out. */
export function eventDigest(event: CrmEvent): string {
  return createHash('sha256')
    .update(canonical(withoutId(event)))
    .digest('hex');
}
