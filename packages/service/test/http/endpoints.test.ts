import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../support/backends.js';
import { getWith, ok, seedEndpointData, shape } from './endpoint-data.js';
import { KEY_A, KEY_AB, TEAM_A, TEAM_B, TEAM_C } from './fixtures.js';
import { auth, type Harness, harness } from './harness.js';
import { leadViolations } from './lead-invariants.js';

describeEachBackend('endpoints', (makeStore) => {
  let h: Harness;
  const leadsA = ['lead_A01', 'lead_A02', 'lead_A03', 'lead_A04', 'lead_A05'];

  beforeAll(async () => {
    h = await harness({ store: await makeStore() });
    await seedEndpointData(h.store);
  });
  afterAll(() => h.close());

  const get = getWith(() => h);

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
});
