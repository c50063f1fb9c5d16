// What the torture kit needs of the fault proxy: a connection reset in the middle of a body, a 5xx
// with Retry-After, and a hook awaited before the plan that sees each request's team and query.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FaultRequest, scriptedPlan } from '../src/fault-proxy/fault-plan.js';
import { type FaultProxy, startFaultProxy } from '../src/fault-proxy/fault-proxy.js';
import { type FakeServer, startFakeServer } from './support/fake-server.js';

let fake: FakeServer;
let proxy: FaultProxy | undefined;
const T = 'team_a';

beforeEach(async () => {
  fake = await startFakeServer([T]);
  for (let n = 0; n < 40; n++) fake.put(T, 'call', { id: `call_${n}`, object: 'call', padding: 'x'.repeat(200) });
});
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
  await fake.close();
});

const target = () => fake.url.replace(/\/v1$/, '');
const feed = (query = '?limit=40') =>
  fetch(`${proxy?.url}/v1/sync/changes${query}`, {
    headers: { authorization: `Bearer ${fake.key}`, 'service-team': T },
  });

describe('fault proxy: what the torture kit scripts', () => {
  it('cut_mid_body: the status and headers arrive, the body stops half way and the connection resets', async () => {
    proxy = await startFaultProxy({ target: target(), plan: scriptedPlan([{ fault: { kind: 'cut_mid_body' } }]) });
    const res = await feed();
    expect(res.status).toBe(200);
    expect(Number(res.headers.get('content-length'))).toBeGreaterThan(8000);
    await expect(res.text()).rejects.toThrow();
    // The service answered the request whole; only the consumer lost it.
    expect(fake.requests.filter((r) => r.path === '/sync/changes')).toHaveLength(1);
    expect(proxy.injected.cut_mid_body).toBe(1);
  });

  it('a 500 or 503 carries Retry-After when the fault sets one, and none otherwise', async () => {
    proxy = await startFaultProxy({
      target: target(),
      plan: scriptedPlan([
        { fault: { kind: 'internal_error', retryAfter: 2 } },
        { fault: { kind: 'service_unavailable', retryAfter: 3 } },
        { fault: { kind: 'internal_error' } },
        { fault: { kind: 'service_unavailable' } },
      ]),
    });
    const seen = [];
    for (let i = 0; i < 4; i++) {
      const res = await feed();
      seen.push([res.status, res.headers.get('retry-after')]);
    }
    expect(seen).toEqual([
      [500, '2'],
      [503, '3'],
      [500, null],
      [503, null],
    ]);
  });

  it('before is awaited before the plan, with the request the plan and rewrite see: its team and query', async () => {
    const order: string[] = [];
    const requests = new Set<FaultRequest>();
    proxy = await startFaultProxy({
      target: target(),
      async before(r) {
        requests.add(r);
        order.push(`before ${r.team} ${r.query}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
        order.push('before done');
      },
      plan: {
        next(r) {
          order.push(`plan ${requests.has(r)}`);
          return null;
        },
      },
      rewrite(r, body) {
        order.push(`rewrite ${requests.has(r)}`);
        return body;
      },
    });
    expect((await feed('?limit=2')).status).toBe(200);
    expect(order).toEqual([`before ${T} ?limit=2`, 'before done', 'plan true', 'rewrite true']);
  });
});
