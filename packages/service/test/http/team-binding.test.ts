import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from './expect-problem.js';
import { call, KEY_A, KEY_AB, KEY_NONE, lead, put, TEAM_A, TEAM_B, TEAM_C, team } from './fixtures.js';
import { auth, type Harness, harness } from './harness.js';

const TEAM_ENDPOINTS = [
  '/v1/members',
  '/v1/booking_services',
  '/v1/boards',
  '/v1/leads',
  '/v1/calls',
  '/v1/conversations',
  '/v1/bookings',
  '/v1/sync/changes',
];

describe('Service-Team binding', () => {
  let h: Harness;
  const get = (url: string, key: string, headers: Record<string, string> = {}) =>
    h.app.inject({ method: 'GET', url, headers: { ...auth(key), ...headers } });

  beforeAll(async () => {
    h = await harness();
    await put(h.store, 'team', team(TEAM_A));
    await put(h.store, 'team', team(TEAM_B));
    await put(h.store, 'lead', lead('lead_A1', TEAM_A));
    await put(h.store, 'call', call('call_B1', TEAM_B, null));
  });
  afterAll(() => h.close());

  it('omitted Service-Team is allowed when the key reads exactly one team', async () => {
    for (const url of TEAM_ENDPOINTS) expect((await get(url, KEY_A)).statusCode, url).toBe(200);
  });

  it('a key with one team may send Service-Team naming that team', async () => {
    for (const url of TEAM_ENDPOINTS)
      expect((await get(url, KEY_A, { 'service-team': TEAM_A })).statusCode, url).toBe(200);
  });

  it('omitted Service-Team with a key reading several teams gets 400 team_required', async () => {
    for (const url of TEAM_ENDPOINTS) expectProblem(await get(url, KEY_AB), 400, 'team_required');
    const search = await h.app.inject({
      method: 'POST',
      url: '/v1/leads/search',
      headers: auth(KEY_AB),
      payload: { email: 'a@b.test' },
    });
    expectProblem(search, 400, 'team_required');
  });

  it('a Service-Team the key does not read gets 404 team_not_accessible', async () => {
    for (const url of TEAM_ENDPOINTS) {
      expectProblem(await get(url, KEY_A, { 'service-team': TEAM_B }), 404, 'team_not_accessible');
      expectProblem(await get(url, KEY_AB, { 'service-team': TEAM_C }), 404, 'team_not_accessible');
    }
  });

  it('a key reading no team gets 404 team_not_accessible', async () => {
    for (const url of TEAM_ENDPOINTS) expectProblem(await get(url, KEY_NONE), 404, 'team_not_accessible');
    const teams = await get('/v1/teams', KEY_NONE);
    expect(JSON.parse(teams.body)).toEqual({ object: 'list', data: [], has_more: false, next_cursor: null });
  });

  it('/me and /teams never take Service-Team and single-record endpoints resolve the team from the id', async () => {
    expect((await get('/v1/me', KEY_AB)).statusCode).toBe(200);
    expect((await get('/v1/teams', KEY_AB)).statusCode).toBe(200);
    expect((await get('/v1/leads/lead_A1', KEY_AB)).statusCode).toBe(200);
    expect((await get('/v1/calls/call_B1', KEY_AB)).statusCode).toBe(200);
    expectProblem(await get('/v1/calls/call_B1', KEY_A), 404, 'resource_missing');
  });

  it('a restricted team answers its 403 code on its endpoints while /teams still lists it', async () => {
    h.access.refusedTeams.set(TEAM_A, 'team_state_restricted');
    try {
      expectProblem(await get('/v1/leads', KEY_A), 403, 'team_state_restricted');
      expectProblem(await get('/v1/leads/lead_A1', KEY_A), 403, 'team_state_restricted');
      expectProblem(await get(`/v1/teams/${TEAM_A}`, KEY_A), 403, 'team_state_restricted');
      const teams = JSON.parse((await get('/v1/teams', KEY_A)).body);
      expect(teams.data.map((t: { id: string }) => t.id)).toEqual([TEAM_A]);
    } finally {
      h.access.refusedTeams.clear();
    }
  });
});

describe('order of checks and the quota', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness();
    await put(h.store, 'team', team(TEAM_A));
    await put(h.store, 'lead', lead('lead_A1', TEAM_A));
  });
  afterAll(() => h.close());

  it('runs firewall, switches, key, scope, then reserves before the team check, and settles the items returned', async () => {
    h.access.calls.length = 0;
    h.access.settled.length = 0;
    const res = await h.app.inject({ method: 'GET', url: '/v1/leads?limit=40', headers: auth(KEY_A) });
    expect(res.statusCode).toBe(200);
    expect(h.access.calls).toEqual([
      'firewall:true',
      'switches:leads.list',
      'authenticate',
      'scope:crm:read',
      'reserve:sync:40:true',
      `team:${TEAM_A}`,
    ]);
    expect(h.access.settled).toEqual([{ rateClass: 'sync', items: 40, quota: true, used: 1 }]);
  });

  it('single records, search and /me use the read class or do not count toward the quota', async () => {
    h.access.calls.length = 0;
    await h.app.inject({ method: 'GET', url: '/v1/leads/lead_A1', headers: auth(KEY_A) });
    await h.app.inject({ method: 'GET', url: '/v1/me', headers: auth(KEY_A) });
    await h.app.inject({
      method: 'POST',
      url: '/v1/leads/search',
      headers: auth(KEY_A),
      payload: { email: 'x@y.test', limit: 10 },
    });
    expect(h.access.calls.filter((c) => c.startsWith('reserve:'))).toEqual([
      'reserve:read:1:false',
      'reserve:read:1:false',
      'reserve:sync:10:false',
    ]);
  });

  it('a never-paged list reserves a fixed allowance and settles the real count', async () => {
    h.access.settled.length = 0;
    await h.app.inject({ method: 'GET', url: '/v1/teams', headers: auth(KEY_A) });
    expect(h.access.settled).toEqual([{ rateClass: 'sync', items: 100, quota: true, used: 1 }]);
  });

  it('a failed request never settles items toward the quota', async () => {
    h.access.settled.length = 0;
    const res = await h.app.inject({
      method: 'GET',
      url: '/v1/conversations?limit=5&cursor=AAAA',
      headers: auth(KEY_A),
    });
    expect(res.statusCode).toBe(400);
    expect(h.access.settled.every((s) => s.used === 0)).toBe(true);
  });

  it('a wrong key gets 401 before any parameter is looked at', async () => {
    expectProblem(
      await h.app.inject({ method: 'GET', url: '/v1/leads?limit=0', headers: auth('crmx_live_wrong') }),
      401,
      'invalid_credentials',
    );
  });
});
