import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { Principal } from '../../src/access/access-control.js';
import { ManualClock } from '../../src/clock.js';
import { CursorCodec } from '../../src/cursor-codec.js';
import { ApiError, type ErrorCode } from '../../src/errors/catalogue.js';
import { type FeedDeps, feedPage } from '../../src/feed/feed-page.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import { SCOPES } from '../../src/schemas/enums.js';
import type { Store } from '../../src/store/store.js';
import { Crm } from '../../src/write/events/crm.js';
import type { CrmEvent } from '../../src/write/events/events.js';
import type { MakeStore } from '../support/backends.js';

// A small organization for feed tests: two prepared teams of one organization, members, a board, a
// bookable service; a controllable clock; the feed read the way the route reads it.

export const T0 = '2026-01-10T10:00:00.000Z';
export const TEAM = 'team_A1';
export const OTHER_TEAM = 'team_B1';
export const BOARD = 'brd_Sales';
export const MEMBERS = ['mem_Zed', 'mem_Amy', 'mem_Bob'] as const;
export const SERVICE = 'svc_Visit';
export const SECOND = 1000;
export const DAY = 24 * 60 * 60 * 1000;

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON read by assertions
export type Json = Record<string, any>;

export interface FeedPageJson {
  object: 'list';
  data: { kind: string; id: string; version: number; object?: Json; removed?: { reason: string } }[];
  has_more: boolean;
  next_cursor: string;
}

export interface FeedWorld {
  store: Store;
  clock: ManualClock;
  crm: Crm;
  codec: CursorCodec;
  limits: Limits;
  /** Team -> refusal code `checkTeam` throws (the 403 codes). */
  refused: Map<string, ErrorCode>;
  principal: Principal;
  apply(...events: CrmEvent[]): Promise<void>;
  /** One page as the route returns it: the raw JSON and its parse. */
  read(options?: { team?: string; cursor?: string; limit?: number }): Promise<{ raw: string; page: FeedPageJson }>;
  /** Follows next_cursor until has_more is false; returns every item and the last cursor. */
  readAll(options?: {
    team?: string;
    cursor?: string;
    limit?: number;
  }): Promise<{ items: FeedPageJson['data']; cursor: string }>;
}

/** Prepared teams TEAM and OTHER_TEAM (organization org_1), a board with three stages, members and a service. */
export async function feedWorld(makeStore: MakeStore, over: Partial<Limits> = {}, captured = true): Promise<FeedWorld> {
  const store = await makeStore();
  const clock = new ManualClock(Date.parse('2026-01-15T09:00:00.000Z'));
  const crm = new Crm(store, clock);
  const codec = new CursorCodec();
  codec.setSecret(randomBytes(32));
  const limits = { ...DEFAULT_LIMITS, ...over };
  const refused = new Map<string, ErrorCode>();
  const principal: Principal = {
    integrationId: 'prn_test',
    keyId: 'key_test',
    name: 'test',
    livemode: true,
    last4: 'abcd',
    teams: [TEAM, OTHER_TEAM],
    scopes: [...SCOPES],
  };
  const deps: FeedDeps = {
    store,
    clock,
    limits,
    codec,
    access: {
      checkTeam: async (_p, team) => {
        const code = refused.get(team);
        if (code) throw new ApiError(code);
      },
    },
  };
  const read: FeedWorld['read'] = async (o = {}) => {
    const { json } = await feedPage(deps, { principal, team: o.team ?? TEAM, cursor: o.cursor, limit: o.limit ?? 100 });
    const raw = json.toString();
    return { raw, page: JSON.parse(raw) as FeedPageJson };
  };
  const w: FeedWorld = {
    store,
    clock,
    crm,
    codec,
    limits,
    refused,
    principal,
    apply: async (...events) => {
      for (const e of events) await crm.apply(e);
    },
    read,
    readAll: async (o = {}) => {
      const items: FeedPageJson['data'] = [];
      let cursor = o.cursor;
      for (;;) {
        const { page } = await read({ ...o, ...(cursor === undefined ? {} : { cursor }) });
        items.push(...page.data);
        cursor = page.next_cursor;
        if (!page.has_more) return { items, cursor };
      }
    },
  };
  const captureAt = captured ? { captured_at: T0 } : {};
  await crm.applyBatch([
    { type: 'organization.upsert', at: T0, organization: 'org_1', name: 'Acme', plan: 'api_included' },
    { type: 'team.upsert', at: T0, team: TEAM, organization: 'org_1', name: 'Sales', ...captureAt },
    { type: 'team.upsert', at: T0, team: OTHER_TEAM, organization: 'org_1', name: 'Branch', ...captureAt },
    ...MEMBERS.map((m) => ({ type: 'member.joined' as const, at: T0, team: TEAM, member: m })),
    {
      type: 'board.upsert',
      at: T0,
      team: TEAM,
      board: BOARD,
      name: 'Sales',
      is_default: true,
      stages: [
        { stage: 'stg_New', name: 'New', is_default: true },
        { stage: 'stg_Call', name: 'Call booked' },
        { stage: 'stg_Won', name: 'Won', is_final: true },
      ],
    },
    { type: 'service.created', at: T0, team: TEAM, service: SERVICE, name: 'Visit' },
  ]);
  return w;
}

/** A lead in TEAM. */
export function newLead(lead: string, extra: Partial<Extract<CrmEvent, { type: 'lead.created' }>> = {}): CrmEvent {
  return { type: 'lead.created', at: T0, team: TEAM, lead, status: 'new', ...extra } as CrmEvent;
}

/** Asserts `promise` fails with the API error `code`. */
export async function expectApiError(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).code).toBe(code);
}

/** `kind:id` of each item, in order. */
export const keys = (items: FeedPageJson['data']) => items.map((i) => `${i.kind}:${i.id}`);
