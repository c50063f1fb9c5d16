import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createOperatorToken, OperatorTokenAuth } from '../../src/access/operator-tokens.js';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { ManualClock } from '../../src/clock.js';
import type { InternalSurface } from '../../src/http/internal-surface.js';
import { buildInternalApp } from '../../src/internal/internal-app.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import type { Metrics } from '../../src/metrics/metrics.js';
import type { Store } from '../../src/store/store.js';
import type { OperatorScope } from '../../src/write/commands/operator-token-state.js';

// The internal app over a store, with its real token checks and lockout (in memory), for tests of the
// internal listener and its surfaces; `inject` sends a request with a token and an address.

export interface InternalHarness {
  app: FastifyInstance;
  store: Store;
  clock: ManualClock;
  tokens: OperatorTokenAuth;
  /** Creates a token with these scopes and returns its text. */
  token(name: string, scopes: OperatorScope[]): Promise<string>;
  inject(options: {
    method?: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH';
    url: string;
    token?: string | undefined;
    ip?: string;
    body?: string | object;
    headers?: Record<string, string>;
  }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export async function internalHarness(
  store: Store,
  surfaces: readonly InternalSurface[],
  limits: Partial<Limits> = {},
  metrics?: Metrics,
): Promise<InternalHarness> {
  const clock = new ManualClock();
  const all = { ...DEFAULT_LIMITS, ...limits };
  const access = new StoreAccessControl({ store, clock, limits: all });
  const tokens = new OperatorTokenAuth({
    store,
    clock,
    lockout: access.lockoutFor('opauth', all),
    cacheMs: all.keyCacheMs,
  });
  const app = buildInternalApp({ store, clock, limits: all, tokens, surfaces, metrics });
  await app.ready();
  return {
    app,
    store,
    clock,
    tokens,
    token: async (name, scopes) => (await createOperatorToken(store, clock, { name, scopes })).token,
    inject: ({ method = 'GET', url, token, ip = '10.1.2.3', body, headers = {} }) =>
      app.inject({
        method,
        url,
        remoteAddress: ip,
        headers: {
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
      }),
    close: async () => {
      await app.close();
      await tokens.settle();
      access.close();
    },
  };
}
