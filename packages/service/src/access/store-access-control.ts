import type { Redis } from 'ioredis';
import type { Clock } from '../clock.js';
import { ApiError } from '../errors/catalogue.js';
import type { Limits } from '../limits.js';
import { SCOPES, type Scope } from '../schemas/enums.js';
import type { Store } from '../store/store.js';
import { effectiveKeyStatus } from '../write/commands/key-state.js';
import {
  isOn,
  parseEndpointList,
  parseSandboxIntegration,
  parseSandboxTeam,
  SWITCH_KEYS,
  sandboxIntegrationKey,
  sandboxTeamKey,
} from '../write/commands/meta-state.js';
import type {
  AccessControl,
  AccessRequest,
  DeferredLocks,
  Principal,
  RateClass,
  RequestBudget,
  Reservation,
  TeamSandboxFaults,
} from './access-control.js';
import { AccessRecords } from './access-records.js';
import { allowlistAllows } from './allowlist.js';
import { teamRefusal } from './eligibility.js';
import { bearerToken, ConnectionKeys, getPepper, looksLikeSecretKey, parseKey } from './keys.js';
import { AuthLockout } from './limits/auth-lockout.js';
import type { CounterStore } from './limits/counter-store.js';
import { createCounterStore } from './limits/create-counter-store.js';
import { DeferredLockChecks } from './limits/deferred-lock-checks.js';
import { FirewallBudget } from './limits/firewall-budget.js';
import { RateLimits, wholeSeconds } from './limits/rate-limits.js';
import type { AwayReason, HealthLogger } from './limits/redis-health.js';
import { secondsUntil } from './sandbox.js';

// The access checks of every request, in the order of docs/auth.md, over the store (what it reads is
// cached: access-records.ts) and the limits' counters (in memory, or on Redis shared by every process).

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

export interface UsageReport {
  /** False when counters live in this process's memory only. */
  shared: boolean;
  itemsThisMinute: number;
  readsThisMinute: number;
  quotaUsedToday: number;
  keys: { id: string; failures: number; lockedUntil: string | null }[];
}

/** The refused request's locks left to its charge, and its Redis time. */
type Refused = { deferred?: DeferredLocks | undefined; budget?: RequestBudget | undefined };

export class StoreAccessControl implements AccessControl {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly counters: CounterStore;
  private readonly lockout: AuthLockout;
  private readonly firewall: FirewallBudget;
  private readonly rates: RateLimits;
  private readonly locks: DeferredLockChecks;
  private readonly records: AccessRecords;
  private readonly connectionKeys = new ConnectionKeys();

  constructor(options: AccessControlOptions) {
    const { store, clock, limits } = options;
    this.store = store;
    this.clock = clock;
    this.counters = createCounterStore({
      redis: options.redis,
      prefix: options.redisPrefix ?? 'crmx',
      budgetMs: limits.redisBudgetMs,
      probeMs: limits.redisProbeMs,
      logger: options.logger,
      onRedisAway: options.onRedisAway,
    });
    this.lockout = new AuthLockout(this.counters, limits, clock);
    this.firewall = new FirewallBudget(this.counters, limits, clock);
    this.rates = new RateLimits(this.counters, limits, clock);
    this.locks = new DeferredLockChecks(this.counters, clock, this.firewall, this.lockout);
    this.records = new AccessRecords(store, clock, limits.keyCacheMs);
  }

  async firewallBlocked(
    ip: string,
    hasWellFormedKey: boolean,
    deferred?: DeferredLocks,
    budget?: RequestBudget,
  ): Promise<boolean> {
    // A request with a well-formed key is charged before it reads anything: its block is checked then.
    if (deferred && hasWellFormedKey) {
      deferred.firewall = 'pending';
      return false;
    }
    return this.firewall.blocked(ip, hasWellFormedKey, budget);
  }

  async checkSwitches(endpoint: string): Promise<void> {
    if (isOn(await this.records.meta(SWITCH_KEYS.apiDisabled))) throw new ApiError('api_disabled');
    const disabled = parseEndpointList(await this.records.meta(SWITCH_KEYS.capabilityDisabled));
    if (disabled.includes(endpoint)) throw new ApiError('capability_disabled');
  }

  async authenticate(request: AccessRequest): Promise<Principal> {
    const { ip, deferred, budget } = request;
    const { clock, lockout } = this;
    if (deferred) deferred.address = 'pending';
    else if (await lockout.ipLocked(ip, budget)) throw new ApiError('rate_limited', { retryAfter: lockout.retryAfter });
    const token = bearerToken(request.authorization);
    if (token !== undefined && request.origin !== undefined && looksLikeSecretKey(token)) {
      return this.refuse(request, new ApiError('secret_key_in_browser'));
    }
    const parsed = token === undefined ? null : parseKey(token);
    if (token === undefined || parsed === null)
      return this.refuse(request, new ApiError('invalid_credentials'), { ip });
    const record = await this.records.key(parsed.lookupId);
    if (!record) return this.refuse(request, new ApiError('invalid_credentials'), { ip });
    const pepper = await getPepper(this.store);
    if (!this.connectionKeys.matches(request.connection, pepper, token, record.key.state.digest)) {
      // The deferred locks and the key's lock in one round trip.
      if ((await this.locks.check(deferred, budget, [lockout.keyLock(record.key.id)])) === 0) {
        await lockout.recordFailure(ip, { budget });
        throw new ApiError('rate_limited', { retryAfter: lockout.retryAfter });
      }
      return this.refuse({ budget }, new ApiError('invalid_credentials'), { ip, keyId: record.key.id });
    }
    // From here the key is genuine: refusals are not counted as failed attempts.
    const status = effectiveKeyStatus(record.key.state, clock.now());
    if (status === 'expired') return this.refuse(request, new ApiError('key_expired'));
    if (status === 'revoked' || record.integration?.state.status !== 'active') {
      return this.refuse(request, new ApiError('invalid_credentials'));
    }
    const integration = record.integration;
    if (!allowlistAllows(integration.state.allowlist, ip)) return this.refuse(request, new ApiError('ip_not_allowed'));
    if (!integration.state.livemode) {
      // A sandbox lockout answers as the failed-authentication lockout does (docs/testing-your-consumer.md).
      const until = parseSandboxIntegration(await this.records.meta(sandboxIntegrationKey(integration.id))).lockedUntil;
      if (until !== undefined && clock.now() < until)
        return this.refuse(request, new ApiError('rate_limited', { retryAfter: secondsUntil(until, clock.now()) }));
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
  }

  requireScope(principal: Principal, scope: Scope): void {
    if (!principal.scopes.includes(scope)) throw new ApiError('insufficient_scope');
  }

  async checkTeam(principal: Principal, team: string): Promise<void> {
    if (!principal.teams.includes(team)) throw new ApiError('team_not_accessible', { param: 'Service-Team' });
    const record = await this.records.team(team);
    if (!record.team) throw new ApiError('team_not_accessible', { param: 'Service-Team' });
    const refusal = teamRefusal(record.team.state, record.org);
    if (refusal) throw new ApiError(refusal);
  }

  async reserve(
    principal: Principal,
    rateClass: RateClass,
    items: number,
    countsTowardQuota: boolean,
    deferred?: DeferredLocks,
    budget?: RequestBudget,
  ): Promise<Reservation> {
    const sandbox = await this.records.sandboxOf(principal);
    if (sandbox) {
      const now = this.clock.now();
      // As a spent day or minute would answer: the day first, nothing counted.
      const day = sandbox.quotaExceededUntil;
      if (countsTowardQuota && day !== undefined && now < day)
        return this.refuse(
          { deferred, budget },
          new ApiError('quota_exceeded', { retryAfter: wholeSeconds(day - now) }),
        );
      const minute = sandbox.rateLimitedUntil;
      if (minute !== undefined && now < minute)
        return this.refuse(
          { deferred, budget },
          new ApiError('rate_limited', { retryAfter: wholeSeconds(minute - now) }),
        );
    }
    const pending = this.locks.pending(deferred);
    let held = -1;
    const locks = pending.map(({ lock }, i) => ({
      ...lock,
      refusal: () => {
        held = i;
        return lock.refusal();
      },
    }));
    try {
      const reservation = await this.rates.reserve(
        principal.integrationId,
        rateClass,
        items,
        countsTowardQuota,
        locks,
        budget,
      );
      if (deferred) this.locks.record(deferred, pending, -1);
      return reservation;
    } catch (error) {
      // Refused by a lock, or by the quota or the rate allowance once every lock was clear.
      if (deferred && (held >= 0 || error instanceof ApiError)) this.locks.record(deferred, pending, held);
      throw error;
    }
  }

  async checkDeferred(deferred: DeferredLocks, budget?: RequestBudget): Promise<void> {
    await this.locks.check(deferred, budget);
  }

  async sandboxFaults(principal: Principal, team: string): Promise<TeamSandboxFaults | undefined> {
    if (principal.livemode) return undefined;
    const state = parseSandboxTeam(await this.records.meta(sandboxTeamKey(team)));
    return {
      notReady: state.notReadyUntil !== undefined && this.clock.now() < state.notReadyUntil,
      capabilitiesOff: state.capabilitiesOff ?? [],
    };
  }

  /**
   * A failed-authentication lockout for another credential (operator tokens), on the same counters (memory
   * or Redis) with the same limits, counted apart from the API keys' under `name`.
   */
  lockoutFor(name: string, limits: Limits): AuthLockout {
    return new AuthLockout(this.counters, limits, this.clock, name);
  }

  /** True while the limits are counted on Redis (false without Redis, or while it is away). */
  get redisUp(): boolean {
    return this.counters.redisUp;
  }

  /** True while the locks on Redis are mirrored in this process, so a charge checks them without Redis. */
  get locksMirrored(): boolean {
    return this.counters.locksMirrored;
  }

  /** Stops the Redis probe; call before closing the Redis client. */
  close(): void {
    this.counters.close();
  }

  /** Counters of an integration and its keys (for `admin usage`). */
  async usage(integrationId: string, keyIds: readonly string[]): Promise<UsageReport> {
    const keysReport: UsageReport['keys'] = [];
    for (const id of keyIds) keysReport.push({ id, ...(await this.lockout.keyStatus(id)) });
    return { shared: this.counters.kind === 'redis', ...(await this.rates.usage(integrationId)), keys: keysReport };
  }

  /** The API keys' lockouts as the management plane reads and ends them (manage/). */
  get keyLockouts(): {
    shared: boolean;
    keyStatus(keyId: string): Promise<{ failures: number; lockedUntil: string | null }>;
    lockedAddresses(): Promise<{ address: string; lockedUntil: string }[]>;
    unlockKey(keyId: string): Promise<void>;
    unlockAddress(ip: string): Promise<void>;
  } {
    const { lockout } = this;
    return {
      shared: this.counters.kind === 'redis',
      keyStatus: (keyId) => lockout.keyStatus(keyId),
      lockedAddresses: () => lockout.lockedAddresses(),
      unlockKey: (keyId) => lockout.unlockKey(keyId),
      unlockAddress: (ip) => lockout.unlockAddress(ip),
    };
  }

  /** A refusal of `authenticate`: the deferred locks answer first; `count` failures toward the lockout. */
  private async refuse(request: Refused, error: ApiError, count?: { ip: string; keyId?: string }): Promise<never> {
    await this.locks.check(request.deferred, request.budget);
    if (count) await this.lockout.recordFailure(count.ip, { keyId: count.keyId, budget: request.budget });
    throw error;
  }
}
