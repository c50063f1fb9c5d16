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
      expect(res.headers.get('retry-after')).toBe(status === 429 ? '9' : null);
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
