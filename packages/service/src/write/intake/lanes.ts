import type { CrmEvent } from '../events/events.js';
import type { WriteError } from '../events/write-error.js';

// Ordering lanes and refusal codes of the intake. Events of one lane apply in `seq` order: when the write
// side refuses one, the later events of its lane wait behind it in the quarantine, and other lanes go on.

/**
 * Fields that name what an event concerns, in the order that picks its lane: the lead first (an
 * interaction's lead, the kept lead of a merge), then the entity the event names.
 */
const LANE_FIELDS = [
  'lead',
  'kept',
  'call',
  'conversation',
  'message',
  'booking',
  'submission',
  'member',
  'board',
  'service',
  'team',
  'organization',
] as const;

/** The event's ordering lane, `<field>:<id>`: the lead it concerns, else the entity it names. */
export function laneOf(event: CrmEvent): string {
  const fields = event as unknown as Record<string, unknown>;
  for (const field of LANE_FIELDS) {
    const value = fields[field];
    if (typeof value === 'string') return `${field === 'kept' ? 'lead' : field}:${value}`;
  }
  return `type:${event.type}`;
}

/** A write-side refusal as the intake reports it: a stable code and the event field at fault. */
export interface Refusal {
  code: string;
  field: string | null;
  message: string;
}

/** Refusal codes by the write side's message (write/events/ names the entity and the rule it breaks). */
const CODES: readonly [RegExp, string][] = [
  [/^unknown /, 'unknown_entity'],
  [/has left the team|has already left|left the team/, 'member_left'],
  [/belongs? to (another|different) team|is not in the organization/, 'wrong_team'],
  [/already exists|was removed|was erased|^\S+ \S+ exists$/, 'already_exists'],
];

/** The code and field of a refusal: the field is the event's field holding the id the message names. */
export function refusalOf(event: CrmEvent, error: WriteError): Refusal {
  const message = error.message;
  const code = CODES.find(([pattern]) => pattern.test(message))?.[1] ?? 'write_refused';
  const words = new Set(message.split(/[\s:;,]+/));
  let field: string | null = null;
  for (const [name, value] of Object.entries(event)) {
    if (name === 'type' || name === 'id' || name === 'at') continue;
    const hit = typeof value === 'string' ? words.has(value) : Array.isArray(value) && value.some((v) => words.has(v));
    if (hit) {
      field = name;
      break;
    }
  }
  // `unknown lead lead_9`, `unknown bookable service svc_1`: the code names the kind (unknown_lead).
  const unknown = code === 'unknown_entity' ? /^unknown (.+) \S+$/.exec(message)?.[1] : undefined;
  return { code: unknown ? `unknown_${unknown.replace(/ /g, '_')}` : code, field, message };
}
