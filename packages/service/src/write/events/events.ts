import { type Static, type TSchema, Type } from 'typebox';
import { INTERACTION_EVENTS } from './interaction-events.js';
import { LEAD_EVENTS } from './lead-events.js';
import { TEAM_EVENTS } from './team-events.js';

// The vocabulary of the write side: every CRM operation is one event. The TypeScript API, the NDJSON
// ingest and the demo generator all build these and hand them to `Crm.apply`. Events may carry
// content (message text, notes, transcripts, form answers) because real CRM events do: the schema
// accepts the fields listed in CONTENT_FIELDS and the write side drops them without storing them.

/** Every event's schema by type, one family a file; the order is the order of the docs and the union. */
export const EVENT_SCHEMAS = { ...TEAM_EVENTS, ...LEAD_EVENTS, ...INTERACTION_EVENTS } as const;

export type EventType = keyof typeof EVENT_SCHEMAS;
export const EVENT_TYPES = Object.keys(EVENT_SCHEMAS) as EventType[];

/** One CRM operation; `type` tells which. */
export const CrmEvent = Type.Union(Object.values(EVENT_SCHEMAS), { $id: 'CrmEvent' }) as unknown as TSchema & {
  static: { [K in EventType]: Static<(typeof EVENT_SCHEMAS)[K]> }[EventType];
};
export type CrmEvent = { [K in EventType]: Static<(typeof EVENT_SCHEMAS)[K]> }[EventType];
export type EventOf<K extends EventType> = Extract<CrmEvent, { type: K }>;
