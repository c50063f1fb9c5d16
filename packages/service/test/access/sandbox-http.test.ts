import { afterEach, expect, it } from 'vitest';
import { createIntegration } from '../../src/access/integrations.js';
import { holdNotReady, setTeamCapability } from '../../src/access/sandbox.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { ManualClock } from '../../src/clock.js';
import { buildApp } from '../../src/http/app.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { Metrics } from '../../src/metrics/metrics.js';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { seedTeam } from './fixtures.js';
import { putTeamRecord } from './http-harness.js';

// The sandbox faults of an example team as the API answers them, whether or not the app counts metrics
// (`crm-export start` does, for its operator listener).

const EXAMPLE = 'team_Example1';

describeEachBackend('sandbox faults over HTTP', (makeStore) => {
  let store: Store | undefined;
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    await store?.close();
  });

  for (const counted of [false, true]) {
    it(`a not-ready example team answers 409 on team endpoints and 404 on its record, a capability off 403${counted ? ', with metrics' : ''}`, async () => {
      store = await makeStore();
      const clock = new ManualClock(Date.parse('2026-01-15T12:00:00.000Z'));
      await seedTeam(store, EXAMPLE, { livemode: false });
      await putTeamRecord(store, EXAMPLE);
      const { key } = await createIntegration(store, clock, { teams: [EXAMPLE], name: 'Example' });
      await holdNotReady(store, clock, EXAMPLE, 60_000);
      await setTeamCapability(store, EXAMPLE, 'booking_services.list', true);
      const access = new StoreAccessControl({ store, clock, limits: DEFAULT_LIMITS });
      const app = buildApp({
        store,
        clock,
        limits: DEFAULT_LIMITS,
        access,
        ...(counted ? { metrics: new Metrics({ processMetrics: false }) } : {}),
      });
      closers.push(
        () => access.close(),
        () => app.close(),
      );
      await app.ready();
      const get = async (url: string) => {
        const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
        return [url, res.statusCode, (JSON.parse(res.body) as { code?: string }).code];
      };
      expect(await get('/v1/members')).toEqual(['/v1/members', 409, 'capture_not_ready']);
      expect(await get(`/v1/teams/${EXAMPLE}`)).toEqual([`/v1/teams/${EXAMPLE}`, 404, 'resource_missing']);
      expect(await get('/v1/booking_services')).toEqual(['/v1/booking_services', 403, 'capability_disabled']);
    });
  }
});
