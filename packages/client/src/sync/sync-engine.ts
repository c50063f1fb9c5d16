// The feed loop of the spec's "Consumer behaviour the contract expects", one loop per team of the key.
import { setTimeout as delay } from 'node:timers/promises';
import {
  AuthenticationError,
  BudgetSpentError,
  ConflictError,
  ConnectionError,
  type CrmExportError,
  CrmExportError as CrmExportErrorClass,
  FirewallError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServerError,
} from '../client/errors.js';
import type { LockFence } from './mirror-store.js';
import { ReferenceIndex } from './references.js';
import type { SyncEngineOptions, SyncLogger } from './sync-engine-options.js';
import { keyDigest, SyncLock, SyncLockLostError } from './sync-lock.js';

const silent: SyncLogger = { info() {}, warn() {}, error() {} };

/** Why a team's loop ended. */
export const TEAM_OUTCOMES = ['caught_up', 'stopped', 'removed', 'not_accessible', 'restricted', 'not_ready'] as const;
export type TeamOutcome = (typeof TEAM_OUTCOMES)[number];

export class SyncEngine {
  private readonly o: Required<Omit<SyncEngineOptions, 'team' | 'lock' | 'onProgress' | 'onWait' | 'signal'>> &
    Pick<SyncEngineOptions, 'team' | 'lock' | 'onProgress' | 'onWait' | 'signal'>;
  /** A 429 pauses every team of the key: the rate limit and quota are shared. */
  private pausedUntil = 0;
  /** Stops every team: the caller's signal, or one team failing. */
  private readonly stop = new AbortController();

  constructor(options: SyncEngineOptions) {
    this.o = {
      once: false,
      intervalMs: 60_000,
      captureRetryMs: 180_000,
      referencesMaxAgeMs: 86_400_000,
      pageLimit: 100,
      maxTransientFailures: 5,
      logger: silent,
      ...options,
    };
    const outer = options.signal;
    if (outer?.aborted) this.stop.abort();
    outer?.addEventListener('abort', () => this.stop.abort(), { once: true });
  }

  /** Reads `/teams` (every run: a team no longer listed has left the key) and syncs each team. */
  async run(): Promise<Record<string, TeamOutcome>> {
    // The client paces itself by the budget headers; the engine says when and why it waits.
    const stopListening = this.o.client.onBudgetWait((info) => {
      const seconds = Math.ceil(info.waitMs / 1000);
      this.o.logger.info(
        {
          team: info.team,
          route: info.route,
          budget: info.policy,
          remaining: info.remaining,
          needed: info.needed,
          wait_s: seconds,
        },
        info.policy === 'items-day'
          ? 'daily item quota spent; waiting until it resets'
          : 'items of this minute spent; waiting until the window resets',
      );
      this.o.onWait?.({
        ...(info.team === undefined ? {} : { team: info.team }),
        reason: info.policy,
        waitMs: info.waitMs,
        remaining: info.remaining,
        needed: info.needed,
      });
    });
    try {
      return await this.runTeams();
    } finally {
      stopListening();
    }
  }

  private async runTeams(): Promise<Record<string, TeamOutcome>> {
    const listed = await this.listedTeams();
    let teams = listed;
    if (this.o.team !== undefined) {
      if (!listed.includes(this.o.team)) {
        throw new Error(`team ${this.o.team} is not listed by /teams for this key`);
      }
      teams = [this.o.team];
    }
    // One team failing (a held lock, a revoked key) stops the others cleanly before the error is reported.
    const settled = await Promise.allSettled(
      teams.map(async (team) => {
        try {
          return [team, await this.runTeam(team)] as const;
        } catch (err) {
          this.stop.abort();
          throw err;
        }
      }),
    );
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    return Object.fromEntries(settled.map((s) => (s as PromiseFulfilledResult<readonly [string, TeamOutcome]>).value));
  }

  private async listedTeams(): Promise<string[]> {
    return (await this.withPause(() => this.o.client.teams())).data.map((t) => t.id);
  }

  /** One team's loop, under its lock. */
  async runTeam(team: string): Promise<TeamOutcome> {
    const { store } = this.o;
    const lock = new SyncLock(store.db, keyDigest(this.o.key), team, this.o.lock);
    await lock.acquire();
    try {
      return await this.loop(team, lock);
    } finally {
      await lock.release();
    }
  }

  private async loop(team: string, lock: SyncLock): Promise<TeamOutcome> {
    const { store, client, logger } = this.o;
    // Every write of the team's data checks the lock in its own transaction: after a stall past the lock's
    // staleness another process may hold it, and this one's write is refused (SyncLockLostError).
    const fence: LockFence = (trx) => lock.holdIn(trx);
    const refs = new ReferenceIndex(store, team, fence);
    let refreshedThisRun = false;
    let items = 0;
    let failures = 0;
    const startState = await store.teamState(team);
    const initial = startState.cursor === null || startState.resyncing === 1;
    logger.info({ team, initial }, 'team sync started');
    while (!this.stop.signal.aborted) {
      if (lock.lost) throw new SyncLockLostError(team);
      try {
        const state = await store.teamState(team);
        const age = state.references_refreshed_at ? Date.now() - Date.parse(state.references_refreshed_at) : Infinity;
        if (!refreshedThisRun || age > this.o.referencesMaxAgeMs) {
          await this.withPause(() => refs.refresh(client));
          refreshedThisRun = true;
        }
        const page = await this.withPause(() =>
          client.changes({ team, cursor: state.cursor ?? undefined, limit: this.o.pageLimit }),
        );
        const result = await store.applyPage(team, page, fence);
        items += page.data.length;
        failures = 0;
        if (result.swept) logger.info({ team }, 'full resync finished; unmarked records deleted');
        this.o.onProgress?.({ team, items, initial, hasMore: page.has_more });
        const unknown = await refs.unknownIn(result.storedObjects);
        if (unknown.size > 0) {
          logger.info({ team, unknown: unknown.size }, 'items name unknown ids; refreshing references');
          await this.withPause(() => refs.refresh(client, unknown));
        }
        if (page.has_more) continue;
        if (this.o.once) return 'caught_up';
        await this.sleep(this.o.intervalMs);
      } catch (err) {
        if (!(err instanceof CrmExportErrorClass)) throw err;
        await store.recordError(team, describe(err));
        const next = await this.handle(team, err, fence);
        if (next === 'retry') continue;
        if (next === 'transient') {
          failures++;
          logger.warn({ team, err: describe(err), failures }, 'transient failure');
          if (this.o.once && failures >= this.o.maxTransientFailures) throw err;
          await this.sleep(Math.min(this.o.intervalMs, 2 ** failures * 1000));
          continue;
        }
        if (typeof next === 'string' && !this.o.once && (next === 'restricted' || next === 'not_accessible')) {
          await this.sleep(this.o.intervalMs);
          continue;
        }
        if (next === 'not_ready' && !this.o.once) {
          await this.sleep(this.o.captureRetryMs);
          continue;
        }
        return next;
      }
    }
    return 'stopped';
  }

  /** What to do after an error the client did not retry away. */
  private async handle(
    team: string,
    err: CrmExportError,
    fence: LockFence,
  ): Promise<TeamOutcome | 'retry' | 'transient'> {
    const { store, logger } = this.o;
    if (err instanceof ConflictError && err.resyncRequired) {
      // Rule 4: 410 sync_cursor_expired and 409 resync_required mean a full resync by mark and sweep.
      logger.warn({ team, code: err.code }, 'full resync');
      await store.startResync(team, fence);
      return 'retry';
    }
    if (err instanceof ConflictError && err.code === 'capture_not_ready') {
      // Rule 4: keep everything and retry in a few minutes; never resync for it.
      logger.info({ team }, 'team data not ready yet');
      return 'not_ready';
    }
    if (err instanceof NotFoundError && err.code === 'team_not_accessible') {
      // Rule 5: read /teams; delete the team's data and cursor only if it is no longer listed.
      const listed = await this.listedTeams();
      if (!listed.includes(team)) {
        logger.warn({ team }, 'team no longer listed by /teams; deleting its data and cursor');
        await store.deleteTeam(team, fence);
        return 'removed';
      }
      return 'not_accessible';
    }
    if (err instanceof BudgetSpentError && err.retryAfter !== null) {
      // The budget headers say the day (or a window) is spent for longer than the client sleeps: stop every
      // team of the key until it resets, without asking.
      this.pausedUntil = Math.max(this.pausedUntil, Date.now() + err.retryAfter * 1000);
      const day = err.code === 'quota_exceeded';
      logger.warn(
        { team, budget: day ? 'items-day' : 'items-minute', wait_s: err.retryAfter },
        day
          ? 'daily item quota spent; stopping until it resets (00:00 UTC)'
          : 'item budget spent; waiting until it resets',
      );
      this.o.onWait?.({ team, reason: day ? 'items-day' : 'items-minute', waitMs: err.retryAfter * 1000 });
      return 'retry';
    }
    if (err instanceof RateLimitError && err.retryAfter !== null) {
      // Quota or rate limit beyond the client's own patience: pause every team of the key.
      this.pausedUntil = Math.max(this.pausedUntil, Date.now() + err.retryAfter * 1000);
      logger.warn({ team, code: err.code, retry_after: err.retryAfter }, 'rate limited; waiting Retry-After');
      const reason = err.code === 'quota_exceeded' ? 'quota_exceeded' : 'rate_limited';
      this.o.onWait?.({ team, reason, waitMs: err.retryAfter * 1000 });
      return 'retry';
    }
    if (err instanceof PermissionError) return 'restricted';
    if (
      err instanceof ServerError ||
      err instanceof ConnectionError ||
      err instanceof RateLimitError ||
      (err instanceof FirewallError && err.status === 429)
    ) {
      return 'transient';
    }
    if (err instanceof AuthenticationError) throw err;
    throw err;
  }

  private async withPause<T>(fn: () => Promise<T>): Promise<T> {
    const wait = this.pausedUntil - Date.now();
    if (wait > 0) await this.sleep(wait);
    return fn();
  }

  /** Sleeps, waking early (without an error) when the run is aborted. */
  private async sleep(ms: number): Promise<void> {
    await delay(ms, undefined, { signal: this.stop.signal }).catch((err: unknown) => {
      if (!this.stop.signal.aborted) throw err;
    });
  }
}

/** Code and status only: problem titles are safe, but never a record or a key. */
function describe(err: CrmExportError): string {
  return `${err.name} ${err.status}${err.code ? ` ${err.code}` : ''}: ${err.message}`;
}
