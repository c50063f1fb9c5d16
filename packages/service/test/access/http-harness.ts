import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createIntegration } from '../../src/access/integrations.js';
import { type AccessControlOptions, StoreAccessControl } from '../../src/access/store-access-control.js';
import { ManualClock } from '../../src/clock.js';
import { buildApp } from '../../src/http/app.js';
import type { TrustProxy } from '../../src/http/trust-proxy.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import type { RecordKind } from '../../src/schemas/enums.js';
import type { Store } from '../../src/store/store.js';
import { seedOrganization, seedTeam } from './fixtures.js';

// The real access control behind the real HTTP app, on a store with two teams of one organization, one
// team outside any, and their team records; `inject` sends a request with a key and an address.

export interface AccessHarness {
  app: FastifyInstance;
  store: Store;
  clock: ManualClock;
  /** `Bearer crmx_live_...` of an integration reading team_a1 and team_a2. */
  key: string;
  integrationId: string;
  /** The access control behind `app` (its `usage` reads the counters). */
  access: StoreAccessControl;
  inject(
    url: string,
    options?: { key?: string | undefined; ip?: string; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
  /** Rebuilds access control and app with other limits (same store and clock). */
  rebuild(limits: Partial<Limits>): Promise<void>;
}

/**
 * Records with only what a list or a charge needs (no filter columns, version 1, a body of `id` and
 * `object` plus `extra`), all written in one transaction.
 */
export async function putPlainRecords(
  store: Store,
  kind: RecordKind,
  team: string,
  ids: readonly string[],
  extra: Record<string, unknown> = {},
): Promise<void> {
  await store.write(async (tx) => {
    for (const id of ids) {
      await tx.putRecord({
        kind,
        id,
        team,
        lead: null,
        board: null,
        stage: null,
        status: null,
        email: null,
        phone: null,
        version: 1,
        updatedAt: '2026-01-15T08:00:00.000Z',
        json: JSON.stringify({ id, object: kind, ...extra }),
      });
    }
  });
}

export async function putTeamRecord(store: Store, id: string): Promise<void> {
  await putPlainRecords(store, 'team', id, [id], {
    livemode: true,
    name: `Team ${id}`,
    timezone: 'Europe/Berlin',
    default_country: 'DE',
  });
}

/** Where the counters live: memory by default, or a Redis client (with its prefix and away/back logger). */
export type CounterOptions = Pick<AccessControlOptions, 'redis' | 'redisPrefix' | 'logger'>;

export async function accessHarness(
  store: Store,
  limits: Partial<Limits> = {},
  options: CounterOptions & { trustProxy?: TrustProxy } = {},
): Promise<AccessHarness> {
  const clock = new ManualClock(Date.parse('2026-01-15T12:00:00.000Z'));
  await seedOrganization(store, 'org_a');
  await seedOrganization(store, 'org_b');
  for (const [id, organization] of [
    ['team_a1', 'org_a'],
    ['team_a2', 'org_a'],
    ['team_solo', null],
  ] as const) {
    await seedTeam(store, id, { organization });
    await putTeamRecord(store, id);
  }
  const created = await createIntegration(store, clock, { teams: ['team_a1', 'team_a2'], name: 'Warehouse' });
  const harness: AccessHarness = {
    app: undefined as unknown as FastifyInstance,
    access: undefined as unknown as AccessHarness['access'],
    store,
    clock,
    key: `Bearer ${created.key}`,
    integrationId: created.integration.id,
    inject(url, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      const key = 'key' in options ? options.key : harness.key;
      if (key !== undefined) headers.authorization = key;
      return harness.app.inject({ method: 'GET', url, headers, remoteAddress: options.ip ?? '192.0.2.10' });
    },
    async rebuild(over) {
      const all = { ...DEFAULT_LIMITS, ...over };
      if (harness.app) await harness.app.close();
      harness.access?.close();
      const { trustProxy, ...counters } = options;
      harness.access = new StoreAccessControl({ store, clock, limits: all, ...counters });
      harness.app = buildApp({
        store,
        clock,
        limits: all,
        access: harness.access,
        ...(trustProxy ? { trustProxy } : {}),
      });
      await harness.app.ready();
    },
  };
  await harness.rebuild(limits);
  return harness;
}
