import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import * as f from './fixtures.js';
import { KEY_A, TEAM_A } from './fixtures.js';
import { auth, type Harness, harness } from './harness.js';

// How many store calls (each one database statement) a read costs once the per-process caches (team,
// capture) are warm.

/** `store` with every call's member name recorded in `calls`. */
function counted(store: Store, calls: string[]): Store {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(name));
        return value.apply(target, args);
      };
    },
  });
}

describeEachBackend('read path', (makeStore) => {
  let h: Harness;
  const calls: string[] = [];

  beforeAll(async () => {
    const store = await makeStore();
    await f.put(store, 'team', f.team(TEAM_A));
    // A prepared team (capture): the process remembers it, so later requests do not read it again.
    await store.write((tx) =>
      tx.putEntity({ kind: 'team', id: TEAM_A, team: TEAM_A, parent: null, state: { capturedAt: f.BASE_TIME } }),
    );
    for (const id of ['lead_A01', 'lead_A02', 'lead_A03']) await f.put(store, 'lead', f.lead(id, TEAM_A));
    await f.put(store, 'lead_attribution', f.attribution('lead_A01', TEAM_A));
    await f.put(store, 'lead_response', f.response('lead_A01', TEAM_A));
    h = await harness({ store: counted(store, calls) });
  });
  afterAll(() => h.close());

  const get = async (url: string) => {
    await h.app.inject({ method: 'GET', url, headers: auth(KEY_A) });
    calls.length = 0;
    const res = await h.app.inject({ method: 'GET', url, headers: auth(KEY_A) });
    expect(res.statusCode).toBe(200);
    return [...calls];
  };

  it('GET /v1/leads/{id} reads the lead and both facets in one store call', async () => {
    expect(await get('/v1/leads/lead_A01')).toEqual(['leadDetail']);
    expect(await get('/v1/leads/lead_A02')).toEqual(['leadDetail']);
  });

  it('GET /v1/leads reads a page in one store call, after the feed head the page cache is checked against', async () => {
    await get('/v1/leads?limit=2');
    // A page cache hit: the head only.
    expect(calls).toEqual(['feedHead']);
    calls.length = 0;
    const res = await h.app.inject({ method: 'GET', url: '/v1/leads?limit=1', headers: auth(KEY_A) });
    expect(res.statusCode).toBe(200);
    expect(calls).toEqual(['feedHead', 'listPage']);
  });
});
