import { Compile } from 'typebox/compile';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createIntegration } from '../../src/access/integrations.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { ManualClock } from '../../src/clock.js';
import { runDemo } from '../../src/demo/run-demo.js';
import { buildApp } from '../../src/http/app.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { FeedItem, ListOf } from '../../src/schemas/envelope.js';
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
import { describeEachBackend } from '../support/backends.js';
import { expectProblem } from './expect-problem.js';
import { leadViolations } from './lead-invariants.js';

// The whole pipeline: demo data written through the write side, a key created by access control,
// the real AccessControl and the real app, every endpoint read as a consumer would.

const lists = {
  '/v1/members': Compile(ListOf(Member, 'M')),
  '/v1/booking_services': Compile(ListOf(BookingService, 'S')),
  '/v1/boards': Compile(ListOf(Board, 'B')),
  '/v1/leads': Compile(ListOf(Lead, 'L')),
  '/v1/calls': Compile(ListOf(Call, 'C')),
  '/v1/conversations': Compile(ListOf(Conversation, 'V')),
  '/v1/bookings': Compile(ListOf(Booking, 'K')),
} as const;

const NEVER_PAGED = ['/v1/members', '/v1/booking_services'];

describeEachBackend('the API end to end on demo data', (makeStore) => {
  let store: Store;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let key: string;
  let teams: string[];
  const clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));

  beforeAll(async () => {
    store = await makeStore();
    const demo = await runDemo(store, { seed: 7, teams: 2, leads: 30, now: clock.now() - 3_600_000, clock });
    teams = demo.teams;
    key = (await createIntegration(store, clock, { teams, name: 'e2e' })).key;
    clock.advance(60_000);
    const limits = { ...DEFAULT_LIMITS, itemsPerMinute: 1_000_000, readRequestsPerMinute: 1_000_000 };
    app = buildApp({ store, access: new StoreAccessControl({ store, clock, limits }), clock, limits, logger: false });
    await app.ready();
  }, 120_000);
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const get = async (url: string, team?: string) => {
    const res = await app.inject({
      method: 'GET',
      url,
      headers: { authorization: `Bearer ${key}`, ...(team ? { 'service-team': team } : {}) },
    });
    expect(res.statusCode, `${url}: ${res.body.slice(0, 200)}`).toBe(200);
    expect(res.headers['service-request-id']).toMatch(/^req_/);
    return JSON.parse(res.body);
  };

  /** Every item of a paged list, page by page through next_cursor. */
  async function walk(
    path: string,
    team: string,
    check: (page: unknown) => boolean,
  ): Promise<Record<string, unknown>[]> {
    if (NEVER_PAGED.includes(path)) {
      const page = await get(path, team);
      expect(check(page), path).toBe(true);
      expect(page).toMatchObject({ has_more: false, next_cursor: null });
      return page.data;
    }
    const items: Record<string, unknown>[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 1000; pages++) {
      const sep = path.includes('?') ? '&' : '?';
      const page = await get(`${path}${sep}limit=100${cursor ? `&cursor=${cursor}` : ''}`, team);
      expect(check(page), path).toBe(true);
      items.push(...page.data);
      if (!page.has_more) return items;
      cursor = page.next_cursor;
    }
    throw new Error('too many pages');
  }

  it('GET /v1/me and /v1/teams describe the key created by access control', async () => {
    const me = await get('/v1/me');
    expect(Compile(Integration).Check(me)).toBe(true);
    expect([...me.teams].sort()).toEqual([...teams].sort());
    const list = await get('/v1/teams');
    expect(Compile(ListOf(Team, 'T')).Check(list)).toBe(true);
    expect(list.data).toHaveLength(teams.length);
    for (const team of teams) expect(Compile(Team).Check(await get(`/v1/teams/${team}`))).toBe(true);
  });

  it('every list endpoint returns schema-valid pages for every team, and every lead keeps the rules of the Lead table', async () => {
    for (const team of teams) {
      for (const [path, schema] of Object.entries(lists)) {
        const items = await walk(path, team, (page) => schema.Check(page));
        expect(items.every((i) => i.team === team)).toBe(true);
        if (path === '/v1/leads') {
          expect(items.length).toBeGreaterThan(0);
          expect(items.flatMap((l) => leadViolations(l as never))).toEqual([]);
        }
      }
    }
  });

  it('GET /v1/leads/{id} returns a schema-valid LeadDetail for every lead, and activities for it', async () => {
    const team = teams[0] as string;
    const leads = await walk('/v1/leads', team, () => true);
    const detail = Compile(LeadDetail);
    const activities = Compile(ListOf(Activity, 'A'));
    for (const lead of leads.slice(0, 40)) {
      const body = await get(`/v1/leads/${lead.id}`);
      expect(detail.Check(body), String(lead.id)).toBe(true);
      expect(leadViolations(body)).toEqual([]);
      const acts = await walk(`/v1/leads/${lead.id}/activities`, team, (p) => activities.Check(p));
      expect(acts.every((a) => a.lead === lead.id)).toBe(true);
    }
  });

  it('single-record endpoints answer every call, conversation and booking by id', async () => {
    const team = teams[0] as string;
    for (const [list, single, schema] of [
      ['/v1/calls', '/v1/calls', Compile(Call)],
      ['/v1/conversations', '/v1/conversations', Compile(Conversation)],
      ['/v1/bookings', '/v1/bookings', Compile(Booking)],
    ] as const) {
      for (const item of (await walk(list, team, () => true)).slice(0, 20)) {
        expect(schema.Check(await get(`${single}/${item.id}`))).toBe(true);
      }
    }
  });

  it('the changes feed delivers every item as a schema-valid FeedItem, oldest first, until caught up', async () => {
    const feedItem = Compile(FeedItem);
    clock.advance(60_000);
    for (const team of teams) {
      let cursor: string | undefined;
      let count = 0;
      for (let pages = 0; pages < 1000; pages++) {
        const page = await get(`/v1/sync/changes?limit=100${cursor ? `&cursor=${cursor}` : ''}`, team);
        for (const item of page.data) expect(feedItem.Check(item), JSON.stringify(item).slice(0, 200)).toBe(true);
        count += page.data.length;
        cursor = page.next_cursor;
        if (!page.has_more) break;
      }
      expect(count).toBeGreaterThan(0);
      const caughtUp = await get(`/v1/sync/changes?cursor=${cursor}`, team);
      expect(caughtUp).toMatchObject({ data: [], has_more: false });
    }
  });

  it('the real pipeline answers a wrong key with 401 and a missing team header with 400 team_required', async () => {
    const wrong = await app.inject({
      method: 'GET',
      url: '/v1/leads',
      headers: { authorization: `Bearer ${key.slice(0, -2)}xx` },
    });
    expectProblem(wrong, 401, 'invalid_credentials');
    expect(wrong.headers['www-authenticate']).toBe('Bearer realm="crm-export"');
    const noTeam = await app.inject({ method: 'GET', url: '/v1/leads', headers: { authorization: `Bearer ${key}` } });
    expectProblem(noTeam, 400, 'team_required');
  });
});
