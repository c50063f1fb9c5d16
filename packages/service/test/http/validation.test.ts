import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyText, expectProblem } from './expect-problem.js';
import { KEY_A, lead, put, TEAM_A, team } from './fixtures.js';
import { auth, type Harness, harness } from './harness.js';

const LEAD = 'lead_V1';

describe('parameter validation', () => {
  let h: Harness;
  const get = (url: string, headers: Record<string, string> = auth(KEY_A)) =>
    h.app.inject({ method: 'GET', url, headers });
  const search = (payload: unknown, headers: Record<string, string> = {}) =>
    h.app.inject({
      method: 'POST',
      url: '/v1/leads/search',
      headers: { ...auth(KEY_A), 'content-type': 'application/json', ...headers },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });

  beforeAll(async () => {
    h = await harness();
    await put(h.store, 'team', team(TEAM_A));
    await put(h.store, 'lead', lead(LEAD, TEAM_A));
  });
  afterAll(() => h.close());

  it('a query string on an endpoint that takes none gets 400 invalid_request', async () => {
    expectProblem(await get('/v1/health?verbose=1', {}), 400, 'invalid_request', 'verbose');
    expectProblem(await get('/v1/me?x=1'), 400, 'invalid_request', 'x');
    expectProblem(await get('/v1/teams?limit=10'), 400, 'invalid_request', 'limit');
    expectProblem(await get('/v1/members?cursor=abc'), 400, 'invalid_request', 'cursor');
    expectProblem(await get('/v1/booking_services?limit=1'), 400, 'invalid_request', 'limit');
    expectProblem(await get(`/v1/leads/${LEAD}?expand=all`), 400, 'invalid_request', 'expand');
    expectProblem(await get(`/v1/teams/${TEAM_A}?a=b`), 400, 'invalid_request', 'a');
  });

  it('an unknown query parameter gets 400 invalid_request naming it', async () => {
    expectProblem(await get('/v1/leads?sort=name'), 400, 'invalid_request', 'sort');
    expectProblem(await get('/v1/sync/changes?since=0'), 400, 'invalid_request', 'since');
    expectProblem(await get('/v1/calls?status=new'), 400, 'invalid_request', 'status');
  });

  it('a repeated query parameter gets 400 invalid_request naming it', async () => {
    expectProblem(await get('/v1/leads?limit=1&limit=2'), 400, 'invalid_request', 'limit');
    expectProblem(await get('/v1/calls?lead=lead_a&lead=lead_b'), 400, 'invalid_request', 'lead');
    expectProblem(await get('/v1/sync/changes?cursor=a&cursor=b'), 400, 'invalid_request', 'cursor');
  });

  it('an out-of-range query parameter gets 400 invalid_request and never repeats the value sent', async () => {
    for (const value of ['0', '101', '-5', '2.5', 'ten', '']) {
      const res = await get(`/v1/leads?limit=${value}`);
      expectProblem(res, 400, 'invalid_request', 'limit');
      if (value.length > 1) expect(bodyText(res)).not.toContain(value);
    }
    const long = 'c'.repeat(513);
    const res = await get(`/v1/boards?cursor=${long}`);
    expectProblem(res, 400, 'invalid_request', 'cursor');
    expect(bodyText(res)).not.toContain(long);
    expectProblem(await get('/v1/leads?status=won'), 400, 'invalid_request', 'status');
    expectProblem(await get('/v1/leads?board=stg_1'), 400, 'invalid_request', 'board');
    expectProblem(await get('/v1/leads?stage=brd_1'), 400, 'invalid_request', 'stage');
    expectProblem(await get('/v1/calls?lead=call_1'), 400, 'invalid_request', 'lead');
  });

  it('limit at the bounds 1 and 100 is accepted', async () => {
    expect((await get('/v1/leads?limit=1')).statusCode).toBe(200);
    expect((await get('/v1/leads?limit=100')).statusCode).toBe(200);
  });

  it('a malformed path id gets 400 invalid_request naming id', async () => {
    expectProblem(await get('/v1/leads/call_1'), 400, 'invalid_request', 'id');
    expectProblem(await get('/v1/teams/team-1'), 400, 'invalid_request', 'id');
    expectProblem(await get('/v1/calls/lead_1'), 400, 'invalid_request', 'id');
  });

  it('a path under /v1/ that cannot be decoded gets 400 invalid_request and never repeats it', async () => {
    const res = await get('/v1/leads/%zz');
    expectProblem(res, 400, 'invalid_request');
    expect(bodyText(res)).not.toContain('%zz');
  });

  it('two or more of board, stage and status on /leads get 400 invalid_request naming the second one', async () => {
    expectProblem(await get('/v1/leads?board=brd_1&stage=stg_1'), 400, 'invalid_request', 'stage');
    expectProblem(await get('/v1/leads?status=new&board=brd_1'), 400, 'invalid_request', 'board');
    expectProblem(await get('/v1/leads?stage=stg_1&limit=5&status=lost&board=brd_1'), 400, 'invalid_request', 'status');
  });

  it('a malformed Service-Team gets 400 invalid_request naming Service-Team', async () => {
    for (const value of ['team-1', 'lead_1', 'team_', `${TEAM_A}, ${TEAM_A}`]) {
      const res = await get('/v1/members', { ...auth(KEY_A), 'service-team': value });
      expectProblem(res, 400, 'invalid_request', 'Service-Team');
      expect(bodyText(res)).not.toContain(value);
    }
  });

  it('a search body that is not the expected JSON gets 400 invalid_request', async () => {
    expectProblem(await search('{"email":'), 400, 'invalid_request');
    expectProblem(await search('[]'), 400, 'invalid_request');
    expectProblem(await search({}), 400, 'invalid_request', 'email');
    expectProblem(await search({ email: 'a@b.test', name: 'Ada' }), 400, 'invalid_request', 'name');
    expectProblem(await search({ email: 42 }), 400, 'invalid_request', 'email');
    expectProblem(await search({ phone: '+4930123456', limit: 0 }), 400, 'invalid_request', 'limit');
    expectProblem(await search({ email: 'a@b.test', cursor: '' }), 400, 'invalid_request', 'cursor');
    expectProblem(
      await search('email=a', { 'content-type': 'application/x-www-form-urlencoded' }),
      400,
      'invalid_request',
    );
  });

  it('a query string on search gets 400 invalid_request', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/leads/search?email=a',
      headers: { ...auth(KEY_A), 'content-type': 'application/json' },
      payload: '{"email":"a@b.test"}',
    });
    expectProblem(res, 400, 'invalid_request', 'email');
  });

  it('a cursor that is not one the service issued gets 400 invalid_request naming cursor', async () => {
    for (const cursor of ['abc', 'x'.repeat(200), Buffer.alloc(40).toString('base64url'), '!!!!']) {
      expectProblem(await get(`/v1/leads?cursor=${encodeURIComponent(cursor)}`), 400, 'invalid_request', 'cursor');
      expectProblem(
        await get(`/v1/sync/changes?cursor=${encodeURIComponent(cursor)}`),
        400,
        'invalid_request',
        'cursor',
      );
    }
  });
});
