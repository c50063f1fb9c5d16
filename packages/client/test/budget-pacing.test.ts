// Pacing by the item budget headers: the figures the client keeps, the waits it takes before asking, and a
// spent day stopping the sync engine (with the reason) instead of asking and getting 429.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitStatus } from '../src/cli.js';
import { ItemBudget, parseBudgetList } from '../src/client/budget.js';
import type { PaceInfo } from '../src/client/client-options.js';
import { CrmExportClient } from '../src/client/crm-export-client.js';
import { BudgetSpentError } from '../src/client/errors.js';
import { FetchTransport, type Transport, type TransportRequest } from '../src/client/transport.js';
import { MirrorStore } from '../src/sync/mirror-store.js';
import { type OpenMirror, openMirror } from '../src/sync/open-mirror.js';
import { SyncEngine } from '../src/sync/sync-engine.js';
import type { SyncWait } from '../src/sync/sync-engine-options.js';
import { type FakeServer, startFakeServer } from './support/fake-server.js';

const T = 'team_a';
const POLICY = '"items-minute";q=150;w=60, "items-day";q=5000;w=86400';
const headersOf = (values: Record<string, string>) => ({
  get: (name: string) => values[name.toLowerCase()] ?? null,
});

describe('the budget figures', () => {
  it('parses the structured-field lists of RateLimit-Policy and RateLimit, skipping what it cannot read', () => {
    const list = parseBudgetList('"items-minute";r=12;t=37, "items-day";r=98000;t=51234, bad member, "x";r=abc');
    expect(list.get('items-minute')).toEqual({ r: 12, t: 37 });
    expect(list.get('items-day')).toEqual({ r: 98000, t: 51234 });
    expect(list.get('x')).toEqual({});
    expect(parseBudgetList(null).size).toBe(0);
  });

  it('the minute asks for a wait when what is left is below what the request sets aside (at most the allowance); the day only when nothing is left', () => {
    const budget = new ItemBudget();
    const now = 1_000_000;
    budget.update(
      headersOf({ 'ratelimit-policy': POLICY, ratelimit: '"items-minute";r=40;t=20, "items-day";r=10;t=999' }),
      now,
    );
    expect(budget.waitFor({ items: 50, countsTowardDay: true }, now)).toEqual({
      policy: 'items-minute',
      waitMs: 20_000,
      remaining: 40,
      needed: 50,
    });
    expect(budget.waitFor({ items: 40, countsTowardDay: true }, now)).toBeNull();
    // The day serves a request while anything is left, however large the page.
    budget.take({ items: 40, countsTowardDay: true }, now);
    expect(budget.state('items-minute', now)?.remaining).toBe(0);
    expect(budget.state('items-day', now)?.remaining).toBe(0);
    expect(budget.waitFor({ items: 1, countsTowardDay: true }, now)?.policy).toBe('items-day');
    // Search does not count toward the day: only the minute holds it up.
    expect(budget.waitFor({ items: 1, countsTowardDay: false }, now)?.policy).toBe('items-minute');
    // Once a window has ended nothing is known of it, and nothing holds a request up.
    expect(budget.waitFor({ items: 1, countsTowardDay: false }, now + 20_000)).toBeNull();
    // A request larger than the whole allowance needs the whole allowance, not more.
    budget.update(headersOf({ 'ratelimit-policy': POLICY, ratelimit: '"items-minute";r=150;t=60' }), now);
    expect(budget.waitFor({ items: 500, countsTowardDay: false }, now)).toBeNull();
  });
});

/** A transport that answers every request with `answer` and records what was sent. */
function scripted(
  answer: (req: TransportRequest) => { status: number; headers: Record<string, string>; body: unknown },
) {
  const sent: string[] = [];
  const transport: Transport = {
    async send(req) {
      sent.push(new URL(req.url).pathname);
      const a = answer(req);
      return {
        status: a.status,
        headers: headersOf({ 'content-type': 'application/json', ...a.headers }),
        text: JSON.stringify(a.body),
      };
    },
  };
  return { transport, sent };
}

const FEED_PAGE = { object: 'list', data: [], has_more: true, next_cursor: 'c1' };

describe('the client paces itself', () => {
  it('waits until the window resets instead of asking when the next page would not fit, and says why', async () => {
    const { transport, sent } = scripted(() => ({
      status: 200,
      headers: { 'ratelimit-policy': POLICY, ratelimit: '"items-minute";r=30;t=2, "items-day";r=4000;t=5000' },
      body: FEED_PAGE,
    }));
    const slept: { ms: number; sentBefore: number }[] = [];
    const paced: PaceInfo[] = [];
    let now = 1_000_000;
    const client = new CrmExportClient({
      baseUrl: 'http://api.test/v1',
      key: 'crmx_live_x',
      transport,
      budget: new ItemBudget(() => now),
      onPace: (p) => paced.push(p),
      sleep: async (ms) => {
        slept.push({ ms, sentBefore: sent.length });
        now += ms;
      },
    });
    // 30 left after each answer: a page of 25 fits, a page of 50 waits for the window (2 s).
    await client.changes({ team: T, limit: 50 });
    await client.changes({ team: T, limit: 25 });
    expect(slept).toEqual([]);
    await client.changes({ team: T, limit: 50 });
    expect(sent).toHaveLength(3);
    expect(slept).toHaveLength(1);
    expect(slept[0]?.sentBefore).toBe(2);
    expect(slept[0]?.ms).toBe(2000);
    expect(paced).toEqual([
      { route: 'changes', team: T, policy: 'items-minute', waitMs: 2000, remaining: 30, needed: 50 },
    ]);
  });

  it('pace: false asks anyway; a read-class request is never held up', async () => {
    const { transport, sent } = scripted((req) => ({
      status: 200,
      headers: { 'ratelimit-policy': POLICY, ratelimit: '"items-minute";r=0;t=50, "items-day";r=0;t=5000' },
      body: req.url.endsWith('/me') ? { object: 'integration' } : FEED_PAGE,
    }));
    const sleeps: number[] = [];
    const unpaced = new CrmExportClient({
      baseUrl: 'http://api.test/v1',
      key: 'k',
      transport,
      pace: false,
      sleep: async (ms) => void sleeps.push(ms),
    });
    await unpaced.changes({ team: T });
    await unpaced.changes({ team: T });
    expect(sent).toHaveLength(2);
    const paced = new CrmExportClient({
      baseUrl: 'http://api.test/v1',
      key: 'k',
      transport,
      sleep: async (ms) => void sleeps.push(ms),
    });
    await paced.changes({ team: T });
    await paced.me();
    expect(sent).toHaveLength(4);
    expect(sleeps).toEqual([]);
  });

  it('a spent day is not slept through: the request fails at once with BudgetSpentError and the seconds to the reset', async () => {
    const { transport, sent } = scripted(() => ({
      status: 200,
      headers: { 'ratelimit-policy': POLICY, ratelimit: '"items-minute";r=150;t=50, "items-day";r=0;t=7200' },
      body: FEED_PAGE,
    }));
    const client = new CrmExportClient({ baseUrl: 'http://api.test/v1', key: 'k', transport });
    await client.changes({ team: T });
    const err = await client.changes({ team: T }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BudgetSpentError);
    expect(err).toMatchObject({ code: 'quota_exceeded', retryAfter: 7200, status: 0 });
    expect(sent).toHaveLength(1);
  });
});

describe('the sync engine and a spent day', () => {
  let fake: FakeServer;
  let mirror: OpenMirror;
  beforeEach(async () => {
    fake = await startFakeServer([T]);
    mirror = await openMirror('sqlite::memory:');
  });
  afterEach(async () => {
    await mirror.close();
    await fake.close();
  });

  it('stops every team until the day resets, reporting why, without asking again', async () => {
    fake.put(T, 'call', { id: 'call_1', object: 'call' });
    // The service's answers, with the day spent: 0 items left, 2 hours to 00:00 UTC.
    const fetch = new FetchTransport();
    const transport: Transport = {
      async send(req) {
        const res = await fetch.send(req);
        const extra: Record<string, string> = {
          'ratelimit-policy': POLICY,
          ratelimit: '"items-minute";r=150;t=50, "items-day";r=0;t=7200',
        };
        return { ...res, headers: { get: (n: string) => extra[n.toLowerCase()] ?? res.headers.get(n) } };
      },
    };
    const client = new CrmExportClient({ baseUrl: fake.url, key: fake.key, transport });
    const stop = new AbortController();
    const waits: SyncWait[] = [];
    const lines: { obj: object; msg?: string }[] = [];
    const logger = {
      info: () => undefined,
      warn: (obj: object, msg?: string) => void lines.push({ obj, ...(msg === undefined ? {} : { msg }) }),
      error: () => undefined,
    };
    const store = new MirrorStore(mirror.db);
    const engine = new SyncEngine({
      client,
      store,
      key: fake.key,
      once: true,
      logger,
      signal: stop.signal,
      onWait: (w) => {
        waits.push(w);
        stop.abort();
      },
    });
    expect(await engine.run()).toEqual({ [T]: 'stopped' });
    // /teams answered with the day spent; nothing was asked after it.
    expect(fake.requests.map((r) => r.path)).toEqual(['/teams']);
    expect(waits).toEqual([{ team: T, reason: 'items-day', waitMs: 7_200_000 }]);
    expect(lines).toContainEqual({
      obj: { team: T, budget: 'items-day', wait_s: 7200 },
      msg: 'daily item quota spent; stopping until it resets (00:00 UTC)',
    });
    expect((await store.teamState(T)).last_error).toMatch(/BudgetSpentError 0 quota_exceeded/);
  });
});

describe('the sync status line', () => {
  it('says how long the sync waits and why: pacing by the budget, or a 429', () => {
    expect(waitStatus({ team: T, reason: 'items-minute', waitMs: 36_200, remaining: 12, needed: 100 })).toBe(
      'waiting 37 s: items this minute spent (12 left, next request takes 100)',
    );
    expect(waitStatus({ team: T, reason: 'items-day', waitMs: 7_200_000 })).toBe(
      'waiting 7200 s: daily item quota spent; resumes after 00:00 UTC',
    );
    expect(waitStatus({ reason: 'rate_limited', waitMs: 2000 })).toBe(
      'waiting 2 s: rate limited (429), waiting Retry-After',
    );
  });
});
