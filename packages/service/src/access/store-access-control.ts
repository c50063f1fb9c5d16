import type { Redis } from 'ioredis';
import type { Clock } from '../clock.js';
import { ApiError } from '../errors/catalogue.js';
import type { Limits } from '../limits.js';
import { SCOPES, type Scope } from '../schemas/enums.js';
import type { Entity, Store } from '../store/store.js';
import type { IntegrationState } from '../write/commands/integration-state.js';
import { type ApiKeyState, effectiveKeyStatus } from '../write/commands/key-state.js';
import {
  isOn,
  parseEndpointList,
  parseSandboxIntegration,
  parseSandboxTeam,
  type SandboxIntegrationState,
  SWITCH_KEYS,
  sandboxIntegrationKey,
  sandboxTeamKey,
} from '../write/commands/meta-state.js';
import type { TeamAccessState } from '../write/commands/team-access.js';
import type { OrganizationState } from '../write/types.js';
import type {
  AccessControl,
  AccessRequest,
  DeferredLocks,
  Principal,
  RateClass,
  RequestBudget,
  Reservation,
} from './access-control.js';
import { allowlistAllows } from './allowlist.js';
import { teamRefusal } from './eligibility.js';
import { bearerToken, ConnectionKeys, getPepper, looksLikeSecretKey, parseKey } from './keys.js';
import { AuthLockout } from './limits/auth-lockout.js';
import { createCounterStore } from './limits/create-counter-store.js';
import { FirewallBudget } from './limits/firewall-budget.js';
import { RateLimits, type RefusingLock, wholeSeconds } from './limits/rate-limits.js';
import type { AwayReason, HealthLogger } from './limits/redis-health.js';
import { secondsUntil } from './sandbox.js';
import { TtlCache } from './ttl-cache.js';

// The access checks of every request, in the order of docs/auth.md. Keys, teams and operator switches are
// read from the store and cached at most `limits.keyCacheMs`, so a revocation or a team change made by any
// process is seen by every process within that time (5 seconds at most by the spec).

export interface AccessControlOptions {
  store: Store;
  clock: Clock;
  limits: Limits;
  /** Shares counters, lockouts and locks between API processes; memory when absent. */
  redis?: Redis | undefined;
  /** Prefix of every Redis key (tests give each run its own). */
  redisPrefix?: string;
  /** Where the one-line "redis away" and "redis back" reports go. */
  logger?: HealthLogger | undefined;
  /** Called each time Redis goes away (metrics). */
  onRedisAway?: ((reason: AwayReason) => void) | undefined;
}

interface KeyRecord {
  key: Entity<ApiKeyState>;
  integration: Entity<IntegrationState> | undefined;
  /** The integration's teams still in the organization they were in when it was created. */
  teams: string[];
}

interface TeamRecord {
  team: Entity<TeamAccessState> | undefined;
  org: OrganizationState | undefined;
}

export function createAccessControl(options: AccessControlOptions): AccessControl & {
  /** Counters of an integration and its keys (for `admin usage`). */
  usage(integrationId: string, keyIds: readonly string[]): Promise<UsageReport>;
  /** True while the limits are counted on Redis (false without Redis, or while it is away). */
  readonly redisUp: boolean;
  /** Stops the Redis probe; call before closing the Redis client. */
  close(): void;
} {
  const { store, clock, limits } = options;
  const counters = createCounterStore({
    redis: options.redis,
    prefix: options.redisPrefix ?? 'crmx',
    budgetMs: limits.redisBudgetMs,
    probeMs: limits.redisProbeMs,
    logger: options.logger,
    onRedisAway: options.onRedisAway,
  });
  const lockout = new AuthLockout(counters, limits, clock);
  const firewall = new FirewallBudget(counters, limits, clock);
  const rates = new RateLimits(counters, limits, clock);
  const keys = new TtlCache<string, KeyRecord | undefined>(clock, limits.keyCacheMs);
  const teams = new TtlCache<string, TeamRecord>(clock, limits.keyCacheMs);
  const switches = new TtlCache<string, string | undefined>(clock, limits.keyCacheMs);
  const connectionKeys = new ConnectionKeys();

  const loadKey = (lookupId: string) =>
    keys.get(lookupId, async () => {
      const key = await store.getEntity<ApiKeyState>('api_key', lookupId);
      if (!key) return undefined;
      const integration = key.parent ? await store.getEntity<IntegrationState>('integration', key.parent) : undefined;
      const covered: string[] = [];
      for (const team of integration?.state.teams ?? []) {
        const record = await loadTeam(team);
        if (record.team && (record.team.state.organization ?? null) === integration!.state.organization) {
          covered.push(team);
        }
      }
      return { key, integration, teams: covered };
    });

  const loadTeam = (id: string) =>
    teams.get(id, async () => {
      const team = await store.getEntity<TeamAccessState>('team', id);
      const orgId = team?.state.organization;
      const org = orgId ? (await store.getEntity<OrganizationState>('organization', orgId))?.state : undefined;
      return { team, org };
    });

  const meta = (key: string) => switches.get(key, () => store.getMeta(key));
  /** Sandbox faults of an example key's integration (never read for a live key). */
  const sandboxOf = async (principal: Principal): Promise<SandboxIntegrationState | undefined> =>
    principal.livemode
      ? undefined
      : parseSandboxIntegration(await meta(sandboxIntegrationKey(principal.integrationId)));

  /** The pending locks of `deferred`, in the order of the checks. */
  const pendingLocks = (deferred: DeferredLocks | undefined) => {
    const pending: { name: 'firewall' | 'address'; lock: RefusingLock }[] = [];
    if (deferred?.firewall === 'pending') pending.push({ name: 'firewall', lock: firewall.block(deferred.ip) });
    if (deferred?.address === 'pending') pending.push({ name: 'address', lock: lockout.addressLock(deferred.ip) });
    return pending;
  };
  /** Records a check of the pending locks: those before the one that holds are clear, those after it moot. */
  const record = (deferred: DeferredLocks, pending: ReturnType<typeof pendingLocks>, held: number) => {
    for (const [i, { name }] of pending.entries()) {
      if (held < 0 || i < held) deferred[name] = 'clear';
      else if (i === held) deferred[name] = 'held';
      else delete deferred[name];
    }
  };
  /**
   * Checks the pending locks of `deferred`, then `extra`, in one round trip: throws the refusal of a pending
   * lock that holds, else returns the index in `extra` of the first that holds (-1 when none does).
   */
  const checkLocks = async (
    deferred: DeferredLocks | undefined,
    budget: RequestBudget | undefined,
    extra: readonly RefusingLock[] = [],
  ) => {
    const pending = pendingLocks(deferred);
    if (pending.length === 0 && extra.length === 0) return -1;
    const charged = await counters.charge([...pending.map((p) => p.lock), ...extra], clock.now(), [], budget);
    const held = !charged.ok && 'lock' in charged ? charged.lock : -1;
    if (deferred) record(deferred, pending, held);
    if (held >= 0 && held < pending.length) throw (pending[held] as (typeof pending)[number]).lock.refusal();
    return held < 0 ? -1 : held - pending.length;
  };
  /** A refusal of `authenticate`: the deferred locks answer first; `count` failures toward the lockout. */
  const refuse = async (
    request: { deferred?: DeferredLocks | undefined; budget?: RequestBudget | undefined },
    error: ApiError,
    count?: { ip: string; keyId?: string },
  ): Promise<never> => {
    await checkLocks(request.deferred, request.budget);
    if (count) await lockout.recordFailure(count.ip, count.keyId, request.budget);
    throw error;
  };

  return {
    async firewallBlocked(ip, hasWellFormedKey, deferred, budget) {
      // A request with a well-formed key is charged before it reads anything: its block is checked then.
      if (deferred && hasWellFormedKey) {
        deferred.firewall = 'pending';
        return false;
      }
      return firewall.blocked(ip, hasWellFormedKey, budget);
    },

    async checkSwitches(endpoint: string): Promise<void> {
      if (isOn(await meta(SWITCH_KEYS.apiDisabled))) throw new ApiError('api_disabled');
      const disabled = parseEndpointList(await meta(SWITCH_KEYS.capabilityDisabled));
      if (disabled.includes(endpoint)) throw new ApiError('capability_disabled');
    },

    async authenticate(request: AccessRequest): Promise<Principal> {
      const { ip, deferred, budget } = request;
      if (deferred) deferred.address = 'pending';
      else if (await lockout.ipLocked(ip, budget))
        throw new ApiError('rate_limited', { retryAfter: lockout.retryAfter });
      const token = bearerToken(request.authorization);
      if (token !== undefined && request.origin !== undefined && looksLikeSecretKey(token)) {
        return refuse(request, new ApiError('secret_key_in_browser'));
      }
      const parsed = token === undefined ? null : parseKey(token);
      if (token === undefined || parsed === null) return refuse(request, new ApiError('invalid_credentials'), { ip });
      const record = await loadKey(parsed.lookupId);
      if (!record) return refuse(request, new ApiError('invalid_credentials'), { ip });
      const pepper = await getPepper(store);
      if (!connectionKeys.matches(request.connection, pepper, token, record.key.state.digest)) {
        // The deferred locks and the key's lock in one round trip.
        if ((await checkLocks(deferred, budget, [lockout.keyLock(record.key.id)])) === 0) {
          await lockout.recordFailure(ip, undefined, budget);
          throw new ApiError('rate_limited', { retryAfter: lockout.retryAfter });
        }
        return refuse({ budget }, new ApiError('invalid_credentials'), { ip, keyId: record.key.id });
      }
      // From here the key is genuine: refusals are not counted as failed attempts.
      const status = effectiveKeyStatus(record.key.state, clock.now());
      if (status === 'expired') return refuse(request, new ApiError('key_expired'));
      if (status === 'revoked' || record.integration?.state.status !== 'active') {
        return refuse(request, new ApiError('invalid_credentials'));
      }
      const integration = record.integration;
      if (!allowlistAllows(integration.state.allowlist, ip)) return refuse(request, new ApiError('ip_not_allowed'));
      if (!integration.state.livemode) {
        // A sandbox lockout answers as the failed-authentication lockout does (docs/testing-your-consumer.md).
        const until = parseSandboxIntegration(await meta(sandboxIntegrationKey(integration.id))).lockedUntil;
        if (until !== undefined && clock.now() < until)
          return refuse(request, new ApiError('rate_limited', { retryAfter: secondsUntil(until, clock.now()) }));
      }
      return {
        integrationId: integration.id,
        keyId: record.key.id,
        name: integration.state.name,
        livemode: integration.state.livemode,
        last4: record.key.state.last4,
        teams: record.teams,
        scopes: SCOPES,
      };
    },

    requireScope(principal: Principal, scope: Scope): void {
      if (!principal.scopes.includes(scope)) throw new ApiError('insufficient_scope');
    },

    async checkTeam(principal: Principal, team: string): Promise<void> {
      if (!principal.teams.includes(team)) throw new ApiError('team_not_accessible', { param: 'Service-Team' });
      const record = await loadTeam(team);
      if (!record.team) throw new ApiError('team_not_accessible', { param: 'Service-Team' });
      const refusal = teamRefusal(record.team.state, record.org);
      if (refusal) throw new ApiError(refusal);
    },

    async reserve(
      principal: Principal,
      rateClass: RateClass,
      items: number,
      countsTowardQuota: boolean,
      deferred?: DeferredLocks,
      budget?: RequestBudget,
    ): Promise<Reservation> {
      const sandbox = await sandboxOf(principal);
      if (sandbox) {
        const now = clock.now();
        // As a spent day or minute would answer: the day first, nothing counted.
        const day = sandbox.quotaExceededUntil;
        if (countsTowardQuota && day !== undefined && now < day)
          return refuse({ deferred, budget }, new ApiError('quota_exceeded', { retryAfter: wholeSeconds(day - now) }));
        const minute = sandbox.rateLimitedUntil;
        if (minute !== undefined && now < minute)
          return refuse({ deferred, budget }, new ApiError('rate_limited', { retryAfter: wholeSeconds(minute - now) }));
      }
      const pending = pendingLocks(deferred);
      let held = -1;
      const locks = pending.map(({ lock }, i) => ({
        ...lock,
        refusal: () => {
          held = i;
          return lock.refusal();
        },
      }));
      try {
        const reservation = await rates.reserve(
          principal.integrationId,
          rateClass,
          items,
          countsTowardQuota,
          locks,
          budget,
        );
        if (deferred) record(deferred, pending, -1);
        return reservation;
      } catch (error) {
        // Refused by a lock, or by the quota or the rate allowance once every lock was clear.
        if (deferred && (held >= 0 || error instanceof ApiError)) record(deferred, pending, held);
        throw error;
      }
    },

    checkDeferred: async (deferred, budget) => {
      await checkLocks(deferred, budget);
    },

    async sandboxFaults(principal: Principal, team: string) {
      if (principal.livemode) return undefined;
      const state = parseSandboxTeam(await meta(sandboxTeamKey(team)));
      return {
        notReady: state.notReadyUntil !== undefined && clock.now() < state.notReadyUntil,
        capabilitiesOff: state.capabilitiesOff ?? [],
      };
    },

    get redisUp() {
      return counters.redisUp;
    },
    close: () => counters.close(),

    async usage(integrationId, keyIds) {
      const keysReport: UsageReport['keys'] = [];
      for (const id of keyIds) keysReport.push({ id, ...(await lockout.keyStatus(id)) });
      return { shared: counters.kind === 'redis', ...(await rates.usage(integrationId)), keys: keysReport };
    },
  };
}

export interface UsageReport {
  /** False when counters live in this process's memory only. */
  shared: boolean;
  itemsThisMinute: number;
  readsThisMinute: number;
  quotaUsedToday: number;
  keys: { id: string; failures: number; lockedUntil: string | null }[];
}
