import { ManualClock } from '../../../src/clock.js';
import type { FeedKind, RecordKind } from '../../../src/schemas/enums.js';
import type { FeedRow, Store } from '../../../src/store/store.js';
import type { CrmOptions } from '../../../src/write/events/context.js';
import { Crm } from '../../../src/write/events/crm.js';
import type { CrmEvent } from '../../../src/write/events/events.js';
import type { MakeStore } from '../../support/backends.js';
import { shapeProblem } from '../../support/record-shape.js';

// A small organization every write-side test starts from: two teams, members, a board with three
// stages and a bookable service. Events are written the way a caller writes them.

export const T0 = '2026-01-10T10:00:00.000Z';
export const TEAM = 'team_A1';
export const OTHER_TEAM = 'team_B1';
export const FOREIGN_TEAM = 'team_C1';
export const BOARD = 'brd_Sales';
export const STAGES = ['stg_New', 'stg_Call', 'stg_Won'] as const;
export const MEMBERS = ['mem_Zed', 'mem_Amy', 'mem_Bob'] as const;
export const SERVICE = 'svc_Visit';

/** A parsed record; tests reach into it freely. */
// biome-ignore lint/suspicious/noExplicitAny: parsed JSON read by assertions
export type Json = Record<string, any>;

export interface World {
  store: Store;
  clock: ManualClock;
  crm: Crm;
  /** Applies events one by one, each at `at` (default T0). */
  apply(...events: CrmEvent[]): Promise<void>;
  /** The stored record, checked against its schema and the schema's key order; undefined when absent or removed. */
  record(kind: RecordKind, id: string): Promise<Json | undefined>;
  version(kind: RecordKind, id: string): Promise<number | undefined>;
  feed(team?: string): Promise<FeedRow[]>;
  /** Feed rows of one record. */
  feedOf(kind: FeedKind, id: string, team?: string): Promise<FeedRow[]>;
  activities(lead: string): Promise<Json[]>;
}

export async function world(makeStore: MakeStore, options: Partial<CrmOptions> = {}): Promise<World> {
  const store = await makeStore();
  const clock = new ManualClock(Date.parse('2026-01-15T09:00:00.000Z'));
  const crm = new Crm(store, clock, options);
  const w: World = {
    store,
    clock,
    crm,
    apply: async (...events) => {
      for (const e of events) await crm.apply(e);
    },
    record: async (kind, id) => {
      const r = await store.getRecord(kind, id);
      if (!r?.json) return undefined;
      const value = JSON.parse(r.json) as Json;
      const problem = shapeProblem(kind, value);
      if (problem) throw new Error(`${kind} ${id} ${problem}`);
      return value;
    },
    version: async (kind, id) => (await store.getRecord(kind, id))?.version,
    feed: async (team = TEAM) => store.readFeed(team, 0, 10_000),
    feedOf: async (kind, id, team = TEAM) =>
      (await store.readFeed(team, 0, 10_000)).filter((f) => f.kind === kind && f.id === id),
    activities: async (lead) => {
      const rows = await store.listRecords({
        team: TEAM,
        kind: 'activity',
        filter: { by: 'lead', value: lead },
        after: 0,
        limit: 100,
      });
      return rows.map((r) => JSON.parse(r.json) as Json);
    },
  };
  await crm.applyBatch([
    { type: 'organization.upsert', at: T0, organization: 'org_1', name: 'Acme', plan: 'api_included' },
    { type: 'organization.upsert', at: T0, organization: 'org_2', name: 'Other', plan: 'no_api' },
    { type: 'team.upsert', at: T0, team: TEAM, organization: 'org_1', name: 'Sales', default_country: 'DE' },
    { type: 'team.upsert', at: T0, team: OTHER_TEAM, organization: 'org_1', name: 'Branch' },
    { type: 'team.upsert', at: T0, team: FOREIGN_TEAM, organization: 'org_2', name: 'Foreign' },
    ...MEMBERS.map((m) => ({
      type: 'member.joined' as const,
      at: T0,
      team: TEAM,
      member: m,
      display_name: m.slice(4),
    })),
    {
      type: 'board.upsert',
      at: T0,
      team: TEAM,
      board: BOARD,
      name: 'Sales',
      is_default: true,
      appointment_booked_stage: 'stg_Call',
      stages: [
        { stage: 'stg_New', name: 'New', is_default: true },
        { stage: 'stg_Call', name: 'Call booked', mode: 'automated' },
        { stage: 'stg_Won', name: 'Won', is_final: true },
      ],
    },
    { type: 'service.created', at: T0, team: TEAM, service: SERVICE, name: 'Visit' },
  ]);
  return w;
}

/** A lead in TEAM with the given extra fields. */
export function newLead(lead: string, extra: Partial<Extract<CrmEvent, { type: 'lead.created' }>> = {}): CrmEvent {
  return { type: 'lead.created', at: T0, team: TEAM, lead, status: 'new', ...extra } as CrmEvent;
}
