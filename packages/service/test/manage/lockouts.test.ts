import { Redis } from 'ioredis';
import { afterEach, expect, it, vi } from 'vitest';
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

// Lockouts over the management API read and end the lockouts of the API process that serves it: with Redis,
// those every process shares.

const REDIS_URL = process.env.REDIS_URL;

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

  /** An internal app over `access`, a token that reads and manages keys, and a GET of `url` with it. */
  async function manage(access: StoreAccessControl, clock: ManualClock, limits: typeof DEFAULT_LIMITS) {
    const tokens = new OperatorTokenAuth({ store, clock, lockout: access.lockoutFor('opauth', limits), cacheMs: 0 });
    const app = buildInternalApp({ store, clock, limits, tokens, surfaces: [manageSurface], access });
    const token = (await createOperatorToken(store, clock, { name: 'ops', scopes: ['read', 'keys'] })).token;
    const headers = { authorization: `Bearer ${token}` };
    return {
      close: async () => {
        await app.close();
        await tokens.settle();
      },
      get: async (url: string) => (await app.inject({ method: 'GET', url, headers })).json(),
      post: (url: string, body: object) =>
        app.inject({
          method: 'POST',
          url,
          headers: { ...headers, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        }),
    };
  }

  /** Two failed authentications from `ip`: with `authFailuresPerIp` 2, the address is locked. */
  const failTwice = async (access: StoreAccessControl, ip: string) => {
    for (let i = 0; i < 2; i++)
      await access.authenticate({ authorization: 'Bearer sk_live_wrong', origin: undefined, ip }).catch(() => {});
  };

  it('an address locked after failed attempts is listed with the end of its lock, and unlock ends it', async () => {
    store = await makeStore();
    const clock = new ManualClock();
    const limits = { ...DEFAULT_LIMITS, authFailuresPerIp: 2 };
    const access = new StoreAccessControl({ store, clock, limits });
    const api = await manage(access, clock, limits);
    close = async () => {
      await api.close();
      access.close();
    };
    expect(await api.get('/manage/v1/lockouts/addresses')).toEqual([]);
    await failTwice(access, '10.0.0.9');
    await failTwice(access, '2001:db8::7');
    const until = new Date(clock.now() + limits.authLockSeconds * 1000).toISOString();
    expect(await api.get('/manage/v1/lockouts/addresses')).toEqual([
      { address: '10.0.0.9', lockedUntil: until },
      { address: '2001:db8::7', lockedUntil: until },
    ]);
    expect((await api.post('/manage/v1/lockouts/unlock', { address: '10.0.0.9' })).statusCode).toBe(200);
    expect(await api.get('/manage/v1/lockouts/addresses')).toEqual([{ address: '2001:db8::7', lockedUntil: until }]);
    // A lock that ended is not listed.
    clock.advance(limits.authLockSeconds * 1000);
    expect(await api.get('/manage/v1/lockouts/addresses')).toEqual([]);
  });

  it.skipIf(!REDIS_URL)(
    `with Redis, the addresses another process locked are listed, and unlock ends them there${REDIS_URL ? '' : ' (skipped: set REDIS_URL)'}`,
    async () => {
      store = await makeStore();
      const clock = new ManualClock();
      const limits = { ...DEFAULT_LIMITS, authFailuresPerIp: 2 };
      const redisPrefix = `crmx-addr-${Date.now()}-${Math.random().toString(36).slice(2)}`;
      const clients = [new Redis(REDIS_URL as string), new Redis(REDIS_URL as string)];
      await Promise.all(clients.map((c) => new Promise((resolve) => c.once('ready', resolve))));
      const [a, b] = clients.map((redis) => new StoreAccessControl({ store, clock, limits, redis, redisPrefix })) as [
        StoreAccessControl,
        StoreAccessControl,
      ];
      const api = await manage(b, clock, limits);
      await vi.waitFor(() => expect(a.redisUp && b.redisUp).toBe(true));
      close = async () => {
        await api.close();
        a.close();
        b.close();
        for (const client of clients) client.disconnect();
      };
      await seedTeam(store, 'team_a1');
      const { key } = await createIntegration(store, clock, { teams: ['team_a1'], name: 'W' });
      const request = { authorization: `Bearer ${key}`, origin: undefined, ip: '10.0.0.9' };
      await failTwice(a, '10.0.0.9');
      await expect(a.authenticate(request)).rejects.toMatchObject({ code: 'rate_limited' });
      // Setting the lock started A's mirror of the locks on Redis, which brings it later values.
      await vi.waitFor(() => expect(a.locksMirrored).toBe(true));
      const until = new Date(clock.now() + limits.authLockSeconds * 1000).toISOString();
      expect(await api.get('/manage/v1/lockouts/addresses')).toEqual([{ address: '10.0.0.9', lockedUntil: until }]);
      expect((await api.post('/manage/v1/lockouts/unlock', { address: '10.0.0.9' })).statusCode).toBe(200);
      expect(await api.get('/manage/v1/lockouts/addresses')).toEqual([]);
      // Process A, which set the lock and keeps a copy of it, hears of the unlock and lets the address in again.
      await vi.waitFor(async () => expect(await a.keyLockouts.lockedAddresses()).toEqual([]), { timeout: 5000 });
      await expect(a.authenticate(request)).resolves.toBeDefined();
    },
  );
});
