import { afterEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { markRestore } from '../../src/feed/feed-epoch.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import type { Store } from '../../src/store/store.js';
import { requestCapture } from '../../src/write/commands/capture.js';
import { Crm } from '../../src/write/events/crm.js';
import { FakeAccess } from '../http/fake-access.js';
import { type Harness, harness } from '../http/harness.js';
import { describeEachBackend } from '../support/backends.js';
import { newLead, OTHER_TEAM, SECOND, T0, TEAM } from './feed-world.js';

// The feed's rules through the HTTP route (buildApp + inject): the route must use the feed's page
// logic, never yield a cursor on a failure, and check refusal and capture on every path.

const KEY = 'crmx_live_ffffffffffff0000000000000000000000000000ffff';

describeEachBackend('GET /v1/sync/changes over HTTP', (makeStore) => {
  let h: Harness | undefined;
  afterEach(async () => h?.close());

  async function setup(captured = true): Promise<{ h: Harness; crm: Crm; store: Store }> {
    const store = await makeStore();
    h = await harness({ store, access: new FakeAccess([{ key: KEY, teams: [TEAM, OTHER_TEAM] }]) });
    const crm = new Crm(store, h.clock);
    const at = captured ? { captured_at: T0 } : {};
    await crm.applyBatch([
      { type: 'team.upsert', at: T0, team: TEAM, name: 'Sales', ...at },
      { type: 'team.upsert', at: T0, team: OTHER_TEAM, name: 'Branch', ...at },
    ]);
    return { h, crm, store };
  }
  const get = async (hh: Harness, query: string, team = TEAM) => {
    const res = await hh.app.inject({
      method: 'GET',
      url: `/v1/sync/changes${query}`,
      headers: { authorization: `Bearer ${KEY}`, 'service-team': team },
    });
    return { status: res.statusCode, raw: res.body, body: JSON.parse(res.body) as Record<string, unknown> };
  };

  it('the last 10 seconds of changes are held back', async () => {
    const { h, crm } = await setup();
    await crm.apply(newLead('lead_1'));
    const first = await get(h, '?limit=100');
    expect(first.body).toMatchObject({ object: 'list', data: [], has_more: false });
    h.clock.advance(10 * SECOND);
    const ready = await get(h, `?cursor=${first.body.next_cursor}`);
    expect((ready.body.data as { id: string }[]).map((i) => i.id)).toContain('lead_1');
  });

  it('every page, even an empty one, returns a new next_cursor; a failed request never yields one', async () => {
    const { h } = await setup();
    const empty = await get(h, '');
    expect(empty.status).toBe(200);
    expect(typeof empty.body.next_cursor).toBe('string');
    const failed = await get(h, `?cursor=${empty.body.next_cursor}`, OTHER_TEAM);
    expect(failed.status).toBe(400);
    expect(failed.body).toMatchObject({ code: 'invalid_request', param: 'cursor' });
    expect(failed.raw).not.toContain('next_cursor');
  });

  it('the same cursor asks for the same page', async () => {
    const { h, crm } = await setup();
    await crm.applyBatch([newLead('lead_1'), newLead('lead_2')]);
    h.clock.advance(10 * SECOND);
    const first = await get(h, '?limit=2');
    const again = await get(h, `?limit=4&cursor=${first.body.next_cursor}`);
    expect(again.body.has_more).toBe(true);
    const retried = await get(h, `?limit=4&cursor=${first.body.next_cursor}`);
    expect(retried.raw).toBe(again.raw);
  });

  it('after a restore an old cursor gets 409 resync_required', async () => {
    const { h, crm, store } = await setup();
    await crm.apply(newLead('lead_1'));
    h.clock.advance(10 * SECOND);
    const page = await get(h, '?limit=100');
    await markRestore(store);
    const stale = await get(h, `?cursor=${page.body.next_cursor}`);
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ code: 'resync_required' });
    expect(stale.raw).not.toContain('next_cursor');
  });

  it('a cursor expires 30 days after the point it reached: 410 sync_cursor_expired', async () => {
    const { h } = await setup();
    const page = await get(h, '');
    h.clock.advance(DEFAULT_LIMITS.cursorLifetimeMs + 1);
    const expired = await get(h, `?cursor=${page.body.next_cursor}`);
    expect(expired.status).toBe(410);
    expect(expired.body).toMatchObject({ code: 'sync_cursor_expired' });
  });

  it('while a team is refused the feed delivers nothing, removals included', async () => {
    const { h, crm } = await setup();
    await crm.apply(newLead('lead_1'));
    h.clock.advance(10 * SECOND);
    const caughtUp = await get(h, '?limit=100');
    await crm.apply({ type: 'lead.erased', at: T0, lead: 'lead_1' });
    h.clock.advance(10 * SECOND);
    h.access.refusedTeams.set(TEAM, 'team_state_restricted');
    const refused = await get(h, `?cursor=${caughtUp.body.next_cursor}`);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'team_state_restricted' });
    expect(refused.raw).not.toContain('lead_1');
    h.access.refusedTeams.delete(TEAM);
    const allowed = await get(h, `?cursor=${caughtUp.body.next_cursor}`);
    expect(allowed.body.data).toContainEqual({ kind: 'lead', id: 'lead_1', version: 2, removed: { reason: 'erased' } });
  });

  it('a team the key does not read gets 404 team_not_accessible', async () => {
    const { h } = await setup();
    const res = await get(h, '', 'team_Z9');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'team_not_accessible' });
  });

  it('team endpoints answer 409 capture_not_ready until the team is prepared', async () => {
    const { h, crm, store } = await setup(false);
    await crm.applyBatch([
      newLead('lead_1'),
      { type: 'call.recorded', at: T0, team: TEAM, call: 'call_1', line: 'pbx', lead: 'lead_1' },
    ]);
    const call = (url: string) =>
      h.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${KEY}`, 'service-team': TEAM } });
    for (const url of ['/v1/sync/changes', '/v1/leads', '/v1/calls', '/v1/members', '/v1/boards']) {
      const res = await call(url);
      expect([url, res.statusCode, JSON.parse(res.body).code]).toEqual([url, 409, 'capture_not_ready']);
    }
    // Single records not yet prepared answer 404 resource_missing.
    for (const url of ['/v1/leads/lead_1', '/v1/calls/call_1', '/v1/leads/lead_1/activities']) {
      const res = await call(url);
      expect([url, res.statusCode, JSON.parse(res.body).code]).toEqual([url, 404, 'resource_missing']);
    }
    await requestCapture(store, new ManualClock(h.clock.now()), [TEAM]);
    for (const url of ['/v1/sync/changes', '/v1/leads', '/v1/leads/lead_1', '/v1/calls/call_1']) {
      expect([url, (await call(url)).statusCode]).toEqual([url, 200]);
    }
    // Facets are null only while being prepared: after capture a lead has both.
    const detail = JSON.parse((await call('/v1/leads/lead_1')).body);
    expect(detail.attribution?.object).toBe('lead_attribution');
    expect(detail.response?.object).toBe('lead_response');
  });
});
