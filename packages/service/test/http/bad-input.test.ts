import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { type AccessHarness, accessHarness } from '../access/http-harness.js';
import { describeEachBackend } from '../support/backends.js';
import { bodyText, expectProblem } from './expect-problem.js';
import { call, lead, put } from './fixtures.js';

// Bad input gets `400 invalid_request` with `param` (or the spec's answer), never a 500 and never
// a 429. Runs through the real access control and rate limiter; the routes come from the app's own OpenAPI
// document, so an endpoint added later is covered without editing this file.

const TEAM = 'team_a1';
const LEAD = 'lead_Bad1';
const HUGE = '9'.repeat(400);

interface Operation {
  parameters?: { in: string; name: string; schema?: { pattern?: string } }[];
}
type Paths = Record<string, { get?: Operation }>;

/** GET paths of the OpenAPI document whose operation takes `name` in `where`. */
function pathsTaking(h: AccessHarness, where: string, name: string): { path: string; operation: Operation }[] {
  const paths = (h.app as unknown as { swagger(): { paths: Paths } }).swagger().paths;
  return Object.entries(paths)
    .filter(([, item]) => item.get?.parameters?.some((p) => p.in === where && p.name === name))
    .map(([path, item]) => ({ path, operation: item.get as Operation }));
}

describeEachBackend('bad input that got the wrong answer', (makeStore) => {
  let store: Store;
  let h: AccessHarness;
  let paged: string[];

  beforeAll(async () => {
    store = await makeStore();
    // A high item allowance: these tests are about validation, and a valid page must never meet the limiter.
    h = await accessHarness(store, { itemsPerMinute: 10_000_000 });
    await put(store, 'lead', lead(LEAD, TEAM));
    await put(store, 'call', call('call_Bad1', TEAM, LEAD));
    await put(store, 'call', call('call_Bad2', TEAM, LEAD));
    paged = pathsTaking(h, 'query', 'limit').map(({ path }) => path.replace('{id}', LEAD));
  });
  afterAll(async () => {
    await h.app.close();
    await store.close();
  });

  const get = (url: string) => h.inject(url, { headers: { 'service-team': TEAM } });
  const search = (body: string) =>
    h.app.inject({
      method: 'POST',
      url: '/v1/leads/search',
      headers: { authorization: h.key, 'service-team': TEAM, 'content-type': 'application/json' },
      payload: body,
      remoteAddress: '192.0.2.10',
    });
  const neverServerOrLimiter = (res: LightMyRequestResponse) => {
    expect(res.statusCode).toBeLessThan(500);
    expect(res.statusCode).not.toBe(429);
  };

  it('the route list holds every paged endpoint and the feed', () => {
    expect(paged).toEqual(
      expect.arrayContaining([
        '/v1/boards',
        '/v1/leads',
        `/v1/leads/${LEAD}/activities`,
        '/v1/calls',
        '/v1/conversations',
        '/v1/bookings',
        '/v1/sync/changes',
      ]),
    );
  });

  it('a limit of -Infinity or -1e309 is 400 invalid_request with param limit, never a 500, on every paged endpoint and the feed', async () => {
    for (const path of paged) {
      for (const value of ['-Infinity', '-1e309', `-${HUGE}`]) {
        const res = await get(`${path}?limit=${value}`);
        expectProblem(res, 400, 'invalid_request', 'limit');
      }
    }
  });

  it('a limit of Infinity, 1e309 or 400 digits is 400 invalid_request with param limit, never a 429, on every paged endpoint and the feed', async () => {
    await h.rebuild({ itemsPerMinute: 100 });
    try {
      for (const path of paged) {
        for (const value of ['Infinity', '1e309', HUGE, '%2BInfinity']) {
          const res = await get(`${path}?limit=${value}`);
          expectProblem(res, 400, 'invalid_request', 'limit');
          expect(bodyText(res)).not.toContain('Infinity');
        }
      }
      // Refused before any reservation: the whole allowance of 100 items is still there.
      expect((await get('/v1/leads?limit=100')).statusCode).toBe(200);
    } finally {
      await h.rebuild({ itemsPerMinute: 10_000_000 });
    }
  });

  it('a limit not written as a plain decimal integer is 400 invalid_request with param limit', async () => {
    for (const value of ['%2B5', '05', '1e1', '0x10', '%205', '5%20', '5.0', '0b1', '-0']) {
      expectProblem(await get(`/v1/leads?limit=${value}`), 400, 'invalid_request', 'limit');
    }
    expect((await get('/v1/leads?limit=5')).statusCode).toBe(200);
  });

  it('a cursor of Infinity, 1e309, 400 digits or 10,000 characters is 400 invalid_request with param cursor on every paged endpoint and the feed', async () => {
    for (const path of paged) {
      for (const value of ['Infinity', '-1e309', HUGE, 'c'.repeat(10_000)]) {
        const res = await get(`${path}?cursor=${value}`);
        expectProblem(res, 400, 'invalid_request', 'cursor');
        expect(bodyText(res)).not.toContain(value.slice(0, 20));
      }
    }
  });

  it("the search body's limit of 1e309, -1e309, 400 digits, 0, 101, 2.5 or a string is 400 invalid_request with param limit", async () => {
    for (const value of ['1e309', '-1e309', HUGE, `-${HUGE}`, '0', '101', '2.5', '"25"', 'null', 'true']) {
      const res = await search(`{"email":"a@b.test","limit":${value}}`);
      expectProblem(res, 400, 'invalid_request', 'limit');
    }
    for (const value of ['1e309', HUGE, '""', `"${'c'.repeat(10_000)}"`, '"Infinity"']) {
      const res = await search(`{"email":"a@b.test","cursor":${value}}`);
      expectProblem(res, 400, 'invalid_request', 'cursor');
    }
    expect((await search('{"email":"a@b.test","limit":100}')).statusCode).toBe(200);
  });

  it('an unknown well-formed path id of any length is 404 resource_missing, on every endpoint taking an id', async () => {
    const byId = pathsTaking(h, 'path', 'id');
    expect(byId.length).toBeGreaterThanOrEqual(6);
    for (const { path, operation } of byId) {
      const pattern = operation.parameters?.find((p) => p.in === 'path')?.schema?.pattern ?? '';
      const prefix = /^\^([a-z]+_)/.exec(pattern)?.[1];
      expect(prefix, path).toBeDefined();
      for (const length of [100, 101, 1_000, 10_000]) {
        const id = `${prefix}${'a'.repeat(length - (prefix as string).length)}`;
        const res = await get(path.replace('{id}', id));
        expectProblem(res, 404, 'resource_missing');
        expect(bodyText(res)).not.toContain(id);
      }
    }
    // The known id still reads, and a long malformed one is still 400 naming id.
    expect((await get(`/v1/leads/${LEAD}`)).statusCode).toBe(200);
    expectProblem(await get(`/v1/leads/lead_${'a'.repeat(5000)}-`), 400, 'invalid_request', 'id');
  });

  it('a well-formed board, stage or lead filter of any length is a filter that matches nothing', async () => {
    const long = 'Z'.repeat(10_000);
    const filters = [
      `/v1/leads?board=brd_${long}`,
      `/v1/leads?stage=stg_${long}`,
      `/v1/calls?lead=lead_${long}`,
      `/v1/conversations?lead=lead_${long}`,
      `/v1/bookings?lead=lead_${long}`,
    ];
    for (const url of filters) {
      for (const limit of ['1', '100']) {
        const res = await get(`${url}&limit=${limit}`);
        expect(res.statusCode, url).toBe(200);
        expect(res.json()).toEqual({ object: 'list', data: [], has_more: false, next_cursor: null });
      }
    }
    // A cursor issued without the filter does not verify with the long one (the filter is in its signature).
    const first = (await get('/v1/calls?limit=1')).json() as { has_more: boolean; next_cursor: string };
    expect(first.has_more).toBe(true);
    const res = await get(`/v1/calls?limit=1&lead=lead_${long}&cursor=${first.next_cursor}`);
    expectProblem(res, 400, 'invalid_request', 'cursor');
  });

  it('any limit outside the integers 1 to 100 is 400 invalid_request with param limit, never a 5xx or a 429 (property)', async () => {
    const limitText = fc.oneof(
      fc.integer({ min: -1000, max: 1000 }).map(String),
      fc.double().map(String),
      fc.bigInt({ min: -(10n ** 400n), max: 10n ** 400n }).map(String),
      fc.string({ unit: 'binary-ascii', maxLength: 12 }),
      fc.string({ unit: 'grapheme', maxLength: 8 }),
      fc.constantFrom('Infinity', '-Infinity', '1e309', '-1e309', '+5', '05', '1e2', '0x10', ' 5', '5.0', '100.0'),
    );
    await fc.assert(
      fc.asyncProperty(limitText, async (value) => {
        const res = await get(`/v1/leads?limit=${encodeURIComponent(value)}`);
        neverServerOrLimiter(res);
        if (/^(?:[1-9][0-9]?|100)$/.test(value)) expect(res.statusCode).toBe(200);
        else expectProblem(res, 400, 'invalid_request', 'limit');
      }),
      { numRuns: 200 },
    );
  });

  it('any query string on a paged endpoint or the feed is answered 200 or 400 invalid_request, never a 5xx or a 429 (property)', async () => {
    const name = fc.constantFrom('limit', 'cursor', 'board', 'stage', 'status', 'lead', '__proto__', 'x', '');
    const value = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('Infinity', '1e309', HUGE, 'new', 'brd_1'));
    const pair = fc.tuple(name, value).map(([n, v]) => `${n}=${encodeURIComponent(v)}`);
    const rawPiece = fc.string({ unit: fc.constantFrom(...'%&=;[]+.-_aZ09'), maxLength: 10 });
    const query = fc.array(fc.oneof(pair, rawPiece), { maxLength: 4 }).map((parts) => parts.join('&'));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paged), query, async (path, q) => {
        const res = await get(`${path}?${q}`);
        neverServerOrLimiter(res);
        if (res.statusCode !== 200) expectProblem(res, 400, 'invalid_request', res.json().param);
      }),
      { numRuns: 200 },
    );
  });
});
