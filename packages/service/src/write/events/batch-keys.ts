import type { RecordKind } from '../../schemas/enums.js';
import type { EntityKind } from '../../store/store.js';
import type { CrmEvent } from './events.js';

// What a batch of events will read, known before it runs: the ids its events name. Read in one go
// (`CachedTx.prefetch`), they spare the events a round trip each on a backend with a network between.

/** Event fields that name an entity, and its kind. */
const FIELDS: Record<string, EntityKind> = {
  organization: 'organization',
  team: 'team',
  to_team: 'team',
  member: 'member',
  service: 'booking_service',
  board: 'board',
  lead: 'lead',
  kept: 'lead',
  duplicate: 'lead',
  new_lead: 'lead',
  submission: 'submission',
  call: 'call',
  conversation: 'conversation',
  message: 'message',
  booking: 'booking',
};

/** The exported records kept under an entity's id. */
const RECORDS: Partial<Record<EntityKind, RecordKind[]>> = {
  team: ['team'],
  member: ['member'],
  booking_service: ['booking_service'],
  board: ['board'],
  lead: ['lead', 'lead_attribution', 'lead_response'],
  call: ['call'],
  conversation: ['conversation'],
  booking: ['booking'],
};

export interface BatchKeys {
  entities: { kind: EntityKind; id: string }[];
  records: { kind: RecordKind; id: string }[];
}

/** The entities and records the events name (duplicates included; the cache skips them). */
export function batchKeys(events: readonly CrmEvent[]): BatchKeys {
  const keys: BatchKeys = { entities: [], records: [] };
  for (const event of events) {
    for (const [field, value] of Object.entries(event)) {
      const kind = FIELDS[field];
      if (kind === undefined || typeof value !== 'string') continue;
      keys.entities.push({ kind, id: value });
      // A recorded message's id must not be an erased one's.
      if (kind === 'message') keys.entities.push({ kind: 'erased_message', id: value });
      for (const record of RECORDS[kind] ?? []) keys.records.push({ kind: record, id: value });
    }
    for (const member of 'assignees' in event ? (event.assignees ?? []) : []) {
      keys.entities.push({ kind: 'member', id: member });
    }
  }
  return keys;
}
