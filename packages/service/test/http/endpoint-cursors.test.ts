import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../support/backends.js';
import { getWith, ok, seedEndpointData, shape } from './endpoint-data.js';
import * as f from './fixtures.js';
import { KEY_AB, TEAM_A, TEAM_B } from './fixtures.js';
import { type Harness, harness } from './harness.js';

// The cursors of the paged lists and the changes feed, over the data of endpoints.test.ts. The tests run in
// order: the conversation one of them erases is the last change the feed's test reads.

describeEachBackend('endpoint cursors and the changes feed', (makeStore) => {
  let h: Harness;

  beforeAll(async () => {
    h = await harness({ store: await makeStore() });
    await seedEndpointData(h.store);
  });
  afterAll(() => h.close());

  const get = getWith(() => h);

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
