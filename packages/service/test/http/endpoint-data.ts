import { Compile } from 'typebox/compile';
import { expect } from 'vitest';
import { FeedPage, ListOf } from '../../src/schemas/envelope.js';
import {
  Activity,
  Board,
  Booking,
  BookingService,
  Call,
  Conversation,
  Integration,
  Lead,
  LeadDetail,
  Member,
  Team,
} from '../../src/schemas/records.js';
import type { Store } from '../../src/store/store.js';
import * as f from './fixtures.js';
import { KEY_A, TEAM_A, TEAM_B, TEAM_C } from './fixtures.js';
import { auth, type Harness } from './harness.js';

// The data the endpoint tests read (endpoints.test.ts, endpoint-cursors.test.ts), and how they ask for it.

export const shape = {
  me: Compile(Integration),
  team: Compile(Team),
  teams: Compile(ListOf(Team, 'T')),
  members: Compile(ListOf(Member, 'M')),
  services: Compile(ListOf(BookingService, 'S')),
  boards: Compile(ListOf(Board, 'B')),
  leads: Compile(ListOf(Lead, 'L')),
  detail: Compile(LeadDetail),
  activities: Compile(ListOf(Activity, 'A')),
  calls: Compile(ListOf(Call, 'C')),
  call: Compile(Call),
  conversations: Compile(ListOf(Conversation, 'V')),
  conversation: Compile(Conversation),
  bookings: Compile(ListOf(Booking, 'K')),
  booking: Compile(Booking),
  feed: Compile(FeedPage),
};

/** Teams A, B and C with their members, boards, leads (five in team A) and the records around them. */
export async function seedEndpointData(s: Store): Promise<void> {
  await f.put(s, 'team', f.team(TEAM_A));
  await f.put(s, 'team', f.team(TEAM_B, { name: null, default_country: null }));
  await f.put(s, 'team', f.team(TEAM_C));
  await f.put(s, 'member', f.member('mem_1', TEAM_A));
  await f.put(s, 'member', f.member('mem_2', TEAM_A));
  await f.put(s, 'member', f.member('mem_9', TEAM_B));
  await f.put(s, 'booking_service', f.service('svc_1', TEAM_A));
  await f.put(s, 'board', f.board('brd_1', TEAM_A, ['stg_1', 'stg_2']));
  await f.put(s, 'lead', f.lead('lead_A01', TEAM_A, { board: 'brd_1', stage: 'stg_1', assignees: ['mem_1', 'mem_2'] }));
  await f.put(
    s,
    'lead',
    f.lead('lead_A02', TEAM_A, {
      status: 'converted',
      converted_at: '2026-01-15T08:30:00.000Z',
      value_at_conversion: 900,
    }),
  );
  await f.put(
    s,
    'lead',
    f.lead('lead_A03', TEAM_A, {
      record_kind: 'client',
      status: null,
      status_set_by: null,
      phone: null,
      phone_status: 'invalid',
    }),
  );
  await f.put(
    s,
    'lead',
    f.lead('lead_A04', TEAM_A, {
      status: 'archived',
      archive_reason: 'merged',
      archived_from_status: 'new',
      merged_into: 'lead_A01',
      email: 'Same@Example.com ',
    }),
  );
  await f.put(
    s,
    'lead',
    f.lead('lead_A05', TEAM_A, {
      status: 'converted',
      converted_at: '2026-01-15T08:31:00.000Z',
      pipeline_cleared: true,
      board: null,
      stage: null,
      priority: null,
      assignees: null,
      estimated_value: null,
      source: null,
      source_detail: null,
      source_provenance: null,
      value_at_conversion: 50,
    }),
  );
  await f.put(s, 'lead', f.lead('lead_B01', TEAM_B, { email: 'same@example.com' }));
  await f.put(s, 'lead_attribution', f.attribution('lead_A01', TEAM_A));
  await f.put(s, 'lead_response', f.response('lead_A01', TEAM_A));
  await f.put(s, 'activity', f.activity('act_1', 'lead_A01', TEAM_A));
  await f.put(s, 'activity', f.activity('act_2', 'lead_A01', TEAM_A));
  await f.put(s, 'activity', f.activity('act_3', 'lead_A02', TEAM_A));
  await f.put(s, 'call', f.call('call_1', TEAM_A, 'lead_A01'));
  await f.put(s, 'call', f.call('call_2', TEAM_A, null));
  await f.put(s, 'call', f.call('call_9', TEAM_B, 'lead_B01'));
  await f.put(s, 'conversation', f.conversation('conv_1', TEAM_A, 'lead_A01'));
  await f.put(s, 'conversation', f.conversation('conv_2', TEAM_A, 'lead_A02'));
  await f.put(s, 'conversation', f.conversation('conv_3', TEAM_A, null));
  await f.put(s, 'booking', f.booking('bkg_1', TEAM_A, 'lead_A01', 'svc_1'));
}

/** A GET through the app of `harness()` with `key`; the body parsed when the answer is 200. */
export function getWith(harness: () => Harness) {
  return async (url: string, key = KEY_A, headers: Record<string, string> = {}) => {
    const res = await harness().app.inject({ method: 'GET', url, headers: { ...auth(key), ...headers } });
    return { res, body: res.statusCode === 200 ? JSON.parse(res.body) : undefined };
  };
}

/** A 200 with the JSON content type and a request id. */
export const ok = (res: { statusCode: number; headers: Record<string, unknown> }) => {
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.headers['service-request-id']).toMatch(/^req_[0-9a-f-]{36}$/);
};
