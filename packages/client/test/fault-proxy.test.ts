import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  FAULT_KINDS,
  type Fault,
  FEED_ONLY_FAULTS,
  randomPlan,
  SCRIPTED_ONLY_FAULTS,
  scriptedPlan,
} from '../src/fault-proxy/fault-plan.js';
import { type FaultProxy, startFaultProxy } from '../src/fault-proxy/fault-proxy.js';
import { type FakeServer, startFakeServer } from './support/fake-server.js';

let fake: FakeServer;
let proxy: FaultProxy;
const T = 'team_a';

beforeEach(async () => {
  fake = await startFakeServer([T]);
  for (let n = 0; n < 3; n++) fake.put(T, 'call', { id: `call_${n}`, object: 'call' });
});
afterEach(async () => {
  await proxy?.close();
  await fake.close();
});

async function withFaults(steps: (Fault | null)[], path = '/sync/changes') {
  proxy = await startFaultProxy({
    target: fake.url.replace(/\/v1$/, ''),
    plan: scriptedPlan(steps.map((fault) => ({ path, fault }))),
  });
}
const get = (p: string, cursor?: string) =>
  fetch(`${proxy.url}/v1${p}${cursor ? `?limit=1&cursor=${cursor}` : '?limit=1'}`, {
    headers: { authorization: `Bearer ${fake.key}` },
  });
const feedRequests = () => fake.requests.filter((r) => r.path === '/sync/changes').length;

/** An upstream whose every answer names the key that asked (its last 4 characters) and the request's URL. */
async function echoServer(padding = 0): Promise<{ url: string; seen: () => number; close: () => Promise<void> }> {
  let seen = 0;
  const server: Server = createServer((req, res) => {
    seen++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ who: (req.headers.authorization ?? '').slice(-4), url: req.url, pad: 'x'.repeat(padding) }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen: () => seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('fault proxy', () => {
  it('passes requests through untouched when the plan has no fault', async () => {
    await withFaults([]);
    const res = await get('/sync/changes');
    expect(res.status).toBe(200);
    expect(res.headers.get('service-request-id')).toMatch(/^req_/);
    const body = (await res.json()) as { data: { id: string }[]; next_cursor: string };
    expect(body.data.map((d) => d.id)).toEqual(['call_0']);
  });

  it('duplicate_page: serves the previous response again', async () => {
    await withFaults([null, { kind: 'duplicate_page' }]);
    const first = await (await get('/sync/changes')).text();
    const second = await (await get('/sync/changes', 'cur_team_a_1')).text();
    expect(second).toBe(first);
    expect(feedRequests()).toBe(1);
    expect(proxy.injected.duplicate_page).toBe(1);
  });

  it("duplicate_page never serves one consumer's page to another: answers are remembered per key", async () => {
    const upstream = await echoServer();
    try {
      const dup = { kind: 'duplicate_page' } as const;
      proxy = await startFaultProxy({
        target: upstream.url,
        plan: scriptedPlan([null, dup, dup, dup].map((fault) => ({ fault }))),
      });
      // Two consumers whose keys each read one team: neither sends Service-Team.
      const as = async (key: string, query: string) =>
        (await (
          await fetch(`${proxy.url}/v1/sync/changes?${query}`, { headers: { authorization: `Bearer ${key}` } })
        ).json()) as {
          who: string;
          url: string;
        };
      expect(await as('crmx_live_AAAAAAAAAAAAAAAAAAAAAAAAkeyA', 'limit=1')).toMatchObject({ who: 'keyA' });
      // B's first request has nothing of B's to repeat: it is forwarded.
      expect(await as('crmx_live_BBBBBBBBBBBBBBBBBBBBBBBBkeyB', 'limit=1')).toMatchObject({ who: 'keyB' });
      expect(upstream.seen()).toBe(2);
      // Each one's next page is answered with its own previous page.
      expect(await as('crmx_live_AAAAAAAAAAAAAAAAAAAAAAAAkeyA', 'limit=1&cursor=a1')).toEqual(
        expect.objectContaining({ who: 'keyA', url: '/v1/sync/changes?limit=1' }),
      );
      expect(await as('crmx_live_BBBBBBBBBBBBBBBBBBBBBBBBkeyB', 'limit=1&cursor=b1')).toEqual(
        expect.objectContaining({ who: 'keyB', url: '/v1/sync/changes?limit=1' }),
      );
      expect(upstream.seen()).toBe(2);
    } finally {
      await upstream.close();
    }
  });

  it('the duplicate-page memory stays within its bound, keys included, however many distinct requests', async () => {
    const upstream = await echoServer(1000);
    const memoryBytes = 64 * 1024;
    try {
      proxy = await startFaultProxy({ target: upstream.url, plan: scriptedPlan([]), memoryBytes });
      const query = (i: number) => `/v1/calls?limit=1&lead=lead_${i}${'y'.repeat(i % 2 === 0 ? 4000 : 10)}`;
      for (let i = 0; i < 600; i++) {
        const res = await fetch(`${proxy.url}${query(i)}`, { headers: { authorization: `Bearer key_${i % 7}` } });
        await res.arrayBuffer();
        expect(proxy.remembered.bytes).toBeLessThanOrEqual(memoryBytes);
      }
      expect(proxy.remembered.entries).toBeGreaterThan(10);
      expect(proxy.remembered.entries).toBeLessThan(64);
      // The latest answer is still there to repeat; the first was forgotten, so its repeat is forwarded.
      proxy.setPlan(scriptedPlan([{ fault: { kind: 'duplicate_page' } }, { fault: { kind: 'duplicate_page' } }]));
      const seen = upstream.seen();
      await (await fetch(`${proxy.url}${query(599)}`, { headers: { authorization: 'Bearer key_4' } })).arrayBuffer();
      expect(upstream.seen()).toBe(seen);
      await (await fetch(`${proxy.url}${query(0)}`, { headers: { authorization: 'Bearer key_0' } })).arrayBuffer();
      expect(upstream.seen()).toBe(seen + 1);
    } finally {
      await upstream.close();
    }
  });

  it('drop_response: the server answered, the consumer gets a closed socket', async () => {
    await withFaults([{ kind: 'drop_response' }]);
    await expect(get('/sync/changes')).rejects.toThrow();
    expect(feedRequests()).toBe(1);
  });

  for (const [kind, status, code] of [
    ['rate_limited', 429, 'rate_limited'],
    ['quota_exceeded', 429, 'quota_exceeded'],
    ['internal_error', 500, 'internal_error'],
    ['service_unavailable', 503, 'service_unavailable'],
    ['sync_cursor_expired', 410, 'sync_cursor_expired'],
    ['resync_required', 409, 'resync_required'],
    ['capture_not_ready', 409, 'capture_not_ready'],
    ['team_not_accessible', 404, 'team_not_accessible'],
  ] as const) {
    it(`${kind}: answers ${status} with a problem+json body`, async () => {
      await withFaults([{ kind, retryAfter: 9 }]);
      const res = await get('/sync/changes');
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      const body = (await res.json()) as { code: string; status: number; request_id: string };
      expect(body).toMatchObject({ code, status });
      expect(res.headers.get('service-request-id')).toBe(body.request_id);
      expect(res.headers.get('retry-after')).toBe(status === 429 || status >= 500 ? '9' : null);
      expect(feedRequests()).toBe(0);
    });
  }

  it("firewall_429: the firewall's plain 429 without JSON, Retry-After or Service-Request-Id", async () => {
    await withFaults([{ kind: 'firewall_429' }]);
    const res = await get('/sync/changes');
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).not.toContain('json');
    expect(res.headers.get('retry-after')).toBeNull();
    expect(res.headers.get('service-request-id')).toBeNull();
  });

  it('delay: answers after the delay', async () => {
    await withFaults([{ kind: 'delay', delayMs: 300 }]);
    const started = Date.now();
    expect((await get('/sync/changes')).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('cut_connection: closes the connection before the server sees the request', async () => {
    await withFaults([{ kind: 'cut_connection' }]);
    await expect(get('/sync/changes')).rejects.toThrow();
    expect(feedRequests()).toBe(0);
  });

  it('random plan: the same seed gives the same faults; feed-only faults stay on the feed; scripted-only ones are never drawn by default', () => {
    const draw = (seed: number, path: string) => {
      const plan = randomPlan({ seed, rate: 0.5 });
      return Array.from({ length: 200 }, () => plan.next({ method: 'GET', path })?.kind ?? null);
    };
    expect(draw(42, '/v1/sync/changes')).toEqual(draw(42, '/v1/sync/changes'));
    expect(draw(42, '/v1/sync/changes')).not.toEqual(draw(43, '/v1/sync/changes'));
    const onFeed = new Set(draw(7, '/v1/sync/changes'));
    expect(FAULT_KINDS.filter((k) => !SCRIPTED_ONLY_FAULTS.includes(k)).every((k) => onFeed.has(k))).toBe(true);
    expect(SCRIPTED_ONLY_FAULTS.some((k) => onFeed.has(k))).toBe(false);
    const elsewhere = draw(7, '/v1/members');
    expect(elsewhere.some((k) => k !== null && FEED_ONLY_FAULTS.includes(k))).toBe(false);
  });

  it('binds to loopback only', async () => {
    await expect(
      startFaultProxy({ target: 'http://127.0.0.1:1', plan: scriptedPlan([]), host: '0.0.0.0' as '127.0.0.1' }),
    ).rejects.toThrow(/loopback only/);
    proxy = await startFaultProxy({ target: fake.url.replace(/\/v1$/, ''), plan: scriptedPlan([]) });
    expect(new URL(proxy.url).hostname).toBe('127.0.0.1');
  });
});
