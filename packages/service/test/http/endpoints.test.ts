import { Compile } from 'typebox/compile';
import { afterAll, beforeAll, expect, it } from 'vitest';
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
import { describeEachBackend } from '../support/backends.js';
import * as f from './fixtures.js';
import { KEY_A, KEY_AB, TEAM_A, TEAM_B, TEAM_C } from './fixtures.js';
import { auth, type Harness, harness } from './harness.js';
import { leadViolations } from './lead-invariants.js';

const shape = {
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

describeEachBackend('endpoints', (makeStore) => {
  let h: Harness;
  const leadsA = ['lead_A01', 'lead_A02', 'lead_A03', 'lead_A04', 'lead_A05'];

  beforeAll(async () => {
    h = await harness({ store: await makeStore() });
    const s = h.store;
    await f.put(s, 'team', f.team(TEAM_A));
    await f.put(s, 'team', f.team(TEAM_B, { name: null, default_country: null }));
    await f.put(s, 'team', f.team(TEAM_C));
    await f.put(s, 'member', f.member('mem_1', TEAM_A));
    await f.put(s, 'member', f.member('mem_2', TEAM_A));
    await f.put(s, 'member', f.member('mem_9', TEAM_B));
    await f.put(s, 'booking_service', f.service('svc_1', TEAM_A));
    await f.put(s, 'board', f.board('brd_1', TEAM_A, ['stg_1', 'stg_2']));
    await f.put(
      s,
      'lead',
      f.lead('lead_A01', TEAM_A, { board: 'brd_1', stage: 'stg_1', assignees: ['mem_1', 'mem_2'] }),
    );
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
  });
  afterAll(() => h.close());

  const get = async (url: string, key = KEY_A, headers: Record<string, string> = {}) => {
    const res = await h.app.inject({ method: 'GET', url, headers: { ...auth(key), ...headers } });
    return { res, body: res.statusCode === 200 ? JSON.parse(res.body) : undefined };
  };
  const ok = (res: { statusCode: number; headers: Record<string, unknown> }) => {
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['service-request-id']).toMatch(/^req_[0-9a-f-]{36}$/);
  };

  it('GET /v1/me returns Integration', async () => {
    const { res, body } = await get('/v1/me', KEY_AB);
    ok(res);
    expect(shape.me.Check(body)).toBe(true);
    expect(body.teams).toEqual([TEAM_A, TEAM_B]);
    expect(body.key.last4).toBe(KEY_AB.slice(-4));
  });

  it('GET /v1/teams returns every team the key reads, never paged', async () => {
    const { res, body } = await get('/v1/teams', KEY_AB);
    ok(res);
    expect(shape.teams.Check(body)).toBe(true);
    expect(body.data.map((t: { id: string }) => t.id)).toEqual([TEAM_A, TEAM_B]);
    expect(body).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('GET /v1/teams/{id} returns Team; a team the key does not read gives 404 resource_missing', async () => {
    const { res, body } = await get(`/v1/teams/${TEAM_A}`);
    ok(res);
    expect(shape.team.Check(body)).toBe(true);
    expect((await get(`/v1/teams/${TEAM_C}`)).res.statusCode).toBe(404);
    expect(JSON.parse((await get(`/v1/teams/${TEAM_B}`)).res.body).code).toBe('resource_missing');
  });

  it('GET /v1/members and /v1/booking_services return the whole list, never paged', async () => {
    const members = await get('/v1/members');
    ok(members.res);
    expect(shape.members.Check(members.body)).toBe(true);
    expect(members.body.data.map((m: { id: string }) => m.id)).toEqual(['mem_1', 'mem_2']);
    expect(members.body).toMatchObject({ has_more: false, next_cursor: null });
    const services = await get('/v1/booking_services');
    ok(services.res);
    expect(shape.services.Check(services.body)).toBe(true);
    expect(services.body.data).toHaveLength(1);
  });

  it('GET /v1/boards returns boards with stages in pipeline order', async () => {
    const { res, body } = await get('/v1/boards');
    ok(res);
    expect(shape.boards.Check(body)).toBe(true);
    expect(body.data[0].stages.map((s: { position: number }) => s.position)).toEqual([0, 1]);
  });

  it('GET /v1/leads returns a page of Lead, every record keeping the rules of the Lead table', async () => {
    const { res, body } = await get('/v1/leads?limit=100');
    ok(res);
    expect(shape.leads.Check(body)).toBe(true);
    expect(body.data.map((l: { id: string }) => l.id)).toEqual(leadsA);
    expect(body.data.flatMap(leadViolations)).toEqual([]);
    expect(body).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('paging: has_more and next_cursor walk the whole list once, and a cursor asks for the same page again', async () => {
    const seen: string[] = [];
    let url = '/v1/leads?limit=2';
    let firstCursor: string | undefined;
    for (;;) {
      const { res, body } = await get(url);
      ok(res);
      expect(shape.leads.Check(body)).toBe(true);
      seen.push(...body.data.map((l: { id: string }) => l.id));
      if (!body.has_more) {
        expect(body.next_cursor).toBeNull();
        break;
      }
      expect(body.next_cursor.length).toBeLessThanOrEqual(512);
      firstCursor ??= body.next_cursor;
      url = `/v1/leads?limit=2&cursor=${body.next_cursor}`;
    }
    expect(seen).toEqual(leadsA);
    const again1 = await get(`/v1/leads?limit=2&cursor=${firstCursor}`);
    const again2 = await get(`/v1/leads?limit=2&cursor=${firstCursor}`);
    expect(again1.body).toEqual(again2.body);
  });

  it('GET /v1/leads filters by one of board, stage, status; a board the team does not have returns an empty page', async () => {
    expect((await get('/v1/leads?board=brd_1')).body.data.map((l: { id: string }) => l.id)).toEqual(['lead_A01']);
    expect((await get('/v1/leads?stage=stg_1')).body.data.map((l: { id: string }) => l.id)).toEqual(['lead_A01']);
    expect((await get('/v1/leads?status=converted')).body.data.map((l: { id: string }) => l.id)).toEqual([
      'lead_A02',
      'lead_A05',
    ]);
    const empty = await get('/v1/leads?board=brd_none');
    expect(empty.body).toEqual({ object: 'list', data: [], has_more: false, next_cursor: null });
  });

  it('GET /v1/leads/{id} returns LeadDetail with both facets, null while a facet is not prepared', async () => {
    const { res, body } = await get('/v1/leads/lead_A01');
    ok(res);
    expect(shape.detail.Check(body)).toBe(true);
    expect(body.attribution.object).toBe('lead_attribution');
    expect(body.response.object).toBe('lead_response');
    expect(leadViolations(body)).toEqual([]);
    const bare = await get('/v1/leads/lead_A02');
    expect(shape.detail.Check(bare.body)).toBe(true);
    expect(bare.body).toMatchObject({ attribution: null, response: null });
  });

  it('a lead of a team the key does not read, or one that does not exist, gives 404 resource_missing', async () => {
    for (const id of ['lead_B01', 'lead_nope']) {
      const { res } = await get(`/v1/leads/${id}`);
      expect(res.statusCode).toBe(404);
      expect(JSON.parse(res.body).code).toBe('resource_missing');
    }
    expect((await get('/v1/leads/lead_B01', KEY_AB)).res.statusCode).toBe(200);
  });

  it('GET /v1/leads/{id}/activities returns the lead activities oldest first', async () => {
    const { res, body } = await get('/v1/leads/lead_A01/activities?limit=1');
    ok(res);
    expect(shape.activities.Check(body)).toBe(true);
    expect(body.data.map((a: { id: string }) => a.id)).toEqual(['act_1']);
    expect(body.has_more).toBe(true);
    const next = await get(`/v1/leads/lead_A01/activities?limit=1&cursor=${body.next_cursor}`);
    expect(next.body.data.map((a: { id: string }) => a.id)).toEqual(['act_2']);
    expect(next.body).toMatchObject({ has_more: false, next_cursor: null });
    expect((await get('/v1/leads/lead_B01/activities')).res.statusCode).toBe(404);
  });

  it('POST /v1/leads/search matches email case-insensitively on the trimmed value, or the E.164 phone', async () => {
    const search = async (payload: unknown, key = KEY_A, headers: Record<string, string> = {}) => {
      const res = await h.app.inject({
        method: 'POST',
        url: '/v1/leads/search',
        headers: { ...auth(key), ...headers },
        payload: payload as object,
      });
      return { res, body: JSON.parse(res.body) };
    };
    const byEmail = await search({ email: '  SAME@example.COM' });
    ok(byEmail.res);
    expect(shape.leads.Check(byEmail.body)).toBe(true);
    expect(byEmail.body.data.map((l: { id: string }) => l.id)).toEqual(['lead_A04']);
    const other = await search({ email: 'same@example.com' }, KEY_AB, { 'service-team': TEAM_B });
    expect(other.body.data.map((l: { id: string }) => l.id)).toEqual(['lead_B01']);
    const byPhone = await search({ phone: '+49 30 123456', limit: 2 });
    expect(byPhone.body.data).toHaveLength(2);
    expect(byPhone.body.has_more).toBe(true);
    const rest = await search({ phone: '+49 30 123456', limit: 2, cursor: byPhone.body.next_cursor });
    expect(rest.body.data.map((l: { id: string }) => l.id)).toEqual(['lead_A04', 'lead_A05']);
    expect(rest.body).toMatchObject({ has_more: false, next_cursor: null });
    const samePhone = await search({ phone: '+4930123456', limit: 2, cursor: byPhone.body.next_cursor });
    expect(samePhone.res.statusCode).toBe(200);
    const otherFilter = await search({ email: 'same@example.com', limit: 2, cursor: byPhone.body.next_cursor });
    expect(otherFilter.res.statusCode).toBe(400);
    expect(otherFilter.body).toMatchObject({ code: 'invalid_request', param: 'cursor' });
    expect((await search({ phone: '12345' })).body.data).toEqual([]);
    expect(h.access.settled.at(-1)).toMatchObject({ quota: false });
  });

  it('GET /v1/calls returns a page of Call; lead= keeps only that lead calls', async () => {
    const { res, body } = await get('/v1/calls');
    ok(res);
    expect(shape.calls.Check(body)).toBe(true);
    expect(body.data.map((c: { id: string }) => c.id)).toEqual(['call_1', 'call_2']);
    const linked = await get('/v1/calls?lead=lead_A01');
    expect(linked.body.data.every((c: { lead: string }) => c.lead === 'lead_A01')).toBe(true);
    expect((await get('/v1/calls?lead=lead_B01')).body.data).toEqual([]);
  });

  it('GET /v1/calls/{id}, /v1/conversations/{id}, /v1/bookings/{id} return the record and resolve its team', async () => {
    const call = await get('/v1/calls/call_1');
    ok(call.res);
    expect(shape.call.Check(call.body)).toBe(true);
    const conv = await get('/v1/conversations/conv_1');
    ok(conv.res);
    expect(shape.conversation.Check(conv.body)).toBe(true);
    const bkg = await get('/v1/bookings/bkg_1');
    ok(bkg.res);
    expect(shape.booking.Check(bkg.body)).toBe(true);
    expect((await get('/v1/calls/call_9')).res.statusCode).toBe(404);
    expect((await get('/v1/calls/call_9', KEY_AB)).res.statusCode).toBe(200);
  });

  it('GET /v1/conversations and /v1/bookings return pages of their records', async () => {
    const conv = await get('/v1/conversations?lead=lead_A02');
    ok(conv.res);
    expect(shape.conversations.Check(conv.body)).toBe(true);
    expect(conv.body.data.map((c: { id: string }) => c.id)).toEqual(['conv_2']);
    const bkg = await get('/v1/bookings');
    ok(bkg.res);
    expect(shape.bookings.Check(bkg.body)).toBe(true);
    expect(bkg.body.data).toHaveLength(1);
  });

  it('a cursor issued for another endpoint gets 400 invalid_request', async () => {
    const calls = await get('/v1/conversations?limit=1');
    const res = (await get(`/v1/calls?limit=1&cursor=${calls.body.next_cursor}`)).res;
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'invalid_request', param: 'cursor' });
  });

  it('a cursor issued for another filter gets 400 invalid_request', async () => {
    const page = await get('/v1/leads?status=converted&limit=1');
    expect(page.body.has_more).toBe(true);
    for (const url of [
      `/v1/leads?limit=1&cursor=${page.body.next_cursor}`,
      `/v1/leads?status=new&limit=1&cursor=${page.body.next_cursor}`,
    ]) {
      const { res } = await get(url);
      expect(res.statusCode).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ code: 'invalid_request', param: 'cursor' });
    }
    expect((await get(`/v1/leads?status=converted&limit=5&cursor=${page.body.next_cursor}`)).res.statusCode).toBe(200);
  });

  it('a cursor issued for another team gets 400 invalid_request', async () => {
    const page = await get('/v1/leads?limit=1', KEY_AB, { 'service-team': TEAM_A });
    const { res } = await get(`/v1/leads?limit=1&cursor=${page.body.next_cursor}`, KEY_AB, { 'service-team': TEAM_B });
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'invalid_request', param: 'cursor' });
  });

  it('a cursor altered in any character gets 400 invalid_request', async () => {
    const page = await get('/v1/leads?limit=1');
    const cursor: string = page.body.next_cursor;
    for (let i = 0; i < cursor.length; i += 7) {
      const altered = cursor.slice(0, i) + (cursor[i] === 'A' ? 'B' : 'A') + cursor.slice(i + 1);
      expect((await get(`/v1/leads?limit=1&cursor=${altered}`)).res.statusCode).toBe(400);
    }
  });

  it('a conversations cursor gets 400 invalid_request once the conversation it points at has been erased', async () => {
    const page = await get('/v1/conversations?limit=1');
    expect(page.body.data[0].id).toBe('conv_1');
    expect((await get(`/v1/conversations?limit=1&cursor=${page.body.next_cursor}`)).res.statusCode).toBe(200);
    await f.remove(h.store, 'conversation', 'conv_1', TEAM_A, 'erased', 2);
    const { res } = await get(`/v1/conversations?limit=1&cursor=${page.body.next_cursor}`);
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'invalid_request', param: 'cursor' });
    expect((await get('/v1/conversations/conv_1')).res.statusCode).toBe(404);
  });

  it('GET /v1/sync/changes returns items oldest first with a next_cursor on every page, even an empty one', async () => {
    h.clock.set(f.BASE_TIME + 60_000);
    const items: { kind: string; id: string }[] = [];
    let url = '/v1/sync/changes?limit=7';
    for (let pages = 0; pages < 20; pages++) {
      const { res, body } = await get(url);
      ok(res);
      expect(shape.feed.Check(body)).toBe(true);
      expect(typeof body.next_cursor).toBe('string');
      items.push(...body.data);
      url = `/v1/sync/changes?limit=7&cursor=${body.next_cursor}`;
      if (!body.has_more) break;
    }
    expect(items.map((i) => i.id).slice(0, 3)).toEqual(['brd_1', 'lead_A01', 'lead_A02']);
    expect(items.at(-1)).toEqual({ kind: 'conversation', id: 'conv_1', version: 2, removed: { reason: 'erased' } });
    expect(items.some((i) => i.kind === 'lead' && i.id === 'lead_B01')).toBe(false);
    const empty = await get(url);
    expect(empty.body).toMatchObject({ data: [], has_more: false });
    expect(typeof empty.body.next_cursor).toBe('string');
  });

  it('the changes feed holds back the last 10 seconds of changes', async () => {
    const start = await get('/v1/sync/changes?limit=100');
    const head = start.body.next_cursor;
    h.clock.set(f.BASE_TIME + 120_000);
    await f.put(h.store, 'call', f.call('call_new', TEAM_A, null), f.BASE_TIME + 115_000);
    const held = await get(`/v1/sync/changes?cursor=${head}`);
    expect(held.body).toMatchObject({ data: [], has_more: false });
    h.clock.set(f.BASE_TIME + 125_001);
    const released = await get(`/v1/sync/changes?cursor=${held.body.next_cursor}`);
    expect(released.body.data.map((i: { id: string }) => i.id)).toEqual(['call_new']);
  });

  it('a feed cursor sent with another team gets 400 invalid_request', async () => {
    const page = await get('/v1/sync/changes?limit=1', KEY_AB, { 'service-team': TEAM_A });
    const { res } = await get(`/v1/sync/changes?cursor=${page.body.next_cursor}`, KEY_AB, { 'service-team': TEAM_B });
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'invalid_request', param: 'cursor' });
  });
});
