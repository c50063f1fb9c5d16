import { afterEach, expect, it } from 'vitest';
import { createIntegration } from '../../src/access/integrations.js';
import { createOperatorToken, OperatorTokenAuth } from '../../src/access/operator-tokens.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { ManualClock } from '../../src/clock.js';
import { buildInternalApp } from '../../src/internal/internal-app.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { manageSurface } from '../../src/manage/api/manage-surface.js';
import type { Store } from '../../src/store/store.js';
import { seedOrganization, seedTeam } from '../access/fixtures.js';
import { describeEachBackend } from '../support/backends.js';

// Lockouts over the management API read and end the lockouts of the API process that serves it.

describeEachBackend('management API: lockouts', (makeStore) => {
  let store: Store;
  let close: () => Promise<void>;
  afterEach(async () => {
    await close?.();
    await store?.close();
  });

  it('a key locked after failed attempts is listed with its lock, and unlock ends it', async () => {
    store = await makeStore();
    await seedOrganization(store, 'org_a');
    await seedTeam(store, 'team_a1', { organization: 'org_a' });
    const clock = new ManualClock();
    const limits = { ...DEFAULT_LIMITS, authFailuresPerKey: 2 };
    const access = new StoreAccessControl({ store, clock, limits });
    const tokens = new OperatorTokenAuth({ store, clock, lockout: access.lockoutFor('opauth', limits), cacheMs: 0 });
    const app = buildInternalApp({ store, clock, limits, tokens, surfaces: [manageSurface], access });
    close = async () => {
      await app.close();
      await tokens.settle();
      access.close();
    };
    const { integration, key } = await createIntegration(store, clock, { teams: ['team_a1'], name: 'W' });
    const wrong = `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    for (const ip of ['10.0.0.1', '10.0.0.2']) {
      await access.authenticate({ authorization: `Bearer ${wrong}`, origin: undefined, ip }).catch(() => {});
    }
    const token = (await createOperatorToken(store, clock, { name: 'ops', scopes: ['read', 'keys'] })).token;
    const get = async () =>
      (
        await app.inject({ method: 'GET', url: '/manage/v1/lockouts', headers: { authorization: `Bearer ${token}` } })
      ).json();
    const [locked] = await get();
    expect(locked).toMatchObject({ integration: integration.id, key: integration.keys[0]?.id });
    expect(locked.lockedUntil).not.toBeNull();
    const unlocked = await app.inject({
      method: 'POST',
      url: '/manage/v1/lockouts/unlock',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ key: integration.keys[0]?.id }),
    });
    expect(unlocked.statusCode).toBe(200);
    expect((await get())[0]).toMatchObject({ failures: 0, lockedUntil: null });
  });
});
