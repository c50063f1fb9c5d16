import { type Redis, ReplyError } from 'ioredis';

// One view of Redis per process, shared by every counter and lock (docs/limits.md, "When Redis fails").
// While Redis is "up", a command races the request's remaining budget; the first one to run out, any
// connection error or any error reply (out of memory, a read-only replica...) marks Redis "away", and from
// then on every counter and lock uses this process's memory at once, without waiting, until a background
// probe (a short-lived write, which a Redis refusing writes refuses too) answers quickly again. So a request
// waits on Redis for at most one budget in all, whether Redis is hung, refusing connections, refusing
// commands or slow.

export type AwayReason = 'timeout' | 'connection error' | 'not ready' | 'error reply';

/** At most one `redis away` line per this period; the outages in between are counted in the next line. */
export const AWAY_LOG_EVERY_MS = 60_000;

/** Where the away/back lines go (a pino logger fits). */
export interface HealthLogger {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

export interface RedisHealthOptions {
  /** Longest a request waits on Redis in all, ms. */
  budgetMs: number;
  /** Interval of the probe that brings Redis back, ms. */
  probeMs: number;
  /** The key the probe writes (it expires at once): under the limits' own prefix. */
  probeKey: string;
  logger?: HealthLogger | undefined;
  /** Called each time Redis goes away (metrics). */
  onAway?: ((reason: AwayReason) => void) | undefined;
}

/**
 * One request's Redis time: what its commands have waited so far. Made per request and passed with every
 * command it sends; a command sent without one gets the whole budget. (Not an AsyncLocalStorage: on Node 20
 * that makes every promise of the process pay a hook, a real share of a request limited on Redis.)
 */
export interface RequestBudget {
  spentMs: number;
}

export class RedisHealth {
  private state: 'up' | 'away' = 'up';
  private releaseWaiters: () => void = () => undefined;
  private awaySignal: Promise<'away'>;
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  private closed = false;
  /** When the last `redis away` line was written, outages since then that wrote none, whether this one did. */
  private lastAwayLine = Number.NEGATIVE_INFINITY;
  private unlogged = 0;
  private loggedThisOutage = false;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisHealthOptions,
  ) {
    this.awaySignal = this.newSignal();
    // ioredis reports each failed reconnect; only the first one of an outage changes anything (and logs).
    redis.on('error', (error: Error) => this.markAway('connection error', error.message));
    redis.on('close', () => this.markAway('connection error', 'connection closed'));
    // A client closed for good (disconnect) is never probed again.
    redis.on('end', () => this.close());
    if (redis.status !== 'ready') this.markAway('not ready');
  }

  /** True while counters and locks go to Redis. */
  get up(): boolean {
    return this.state === 'up';
  }

  /**
   * `command` on Redis within what is left of `budget` (the request's Redis waits add up to at most
   * `budgetMs`), else `fallback` (this process's memory).
   */
  async run<T>(command: () => Promise<T>, fallback: () => Promise<T>, budget?: RequestBudget): Promise<T> {
    if (this.state === 'away') return fallback();
    if (this.redis.status !== 'ready') {
      this.markAway('not ready');
      return fallback();
    }
    const left = this.options.budgetMs - (budget?.spentMs ?? 0);
    if (left <= 0) {
      this.markAway('timeout');
      return fallback();
    }
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      command().then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), left);
      }),
      this.awaySignal,
    ]);
    clearTimeout(timer);
    if (budget) budget.spentMs += performance.now() - started;
    if (outcome === 'timeout') this.markAway('timeout');
    if (typeof outcome === 'string') return fallback();
    if ('error' in outcome) {
      const { error } = outcome;
      const message = error instanceof Error ? error.message : String(error);
      // Redis answering with an error (OOM, READONLY, NOREPLICAS, MISCONF...) counts nothing shared: every later
      // command would fail alike. Only the reply's code is logged: the rest may name a key or a script line.
      if (error instanceof ReplyError) this.markAway('error reply', message.split(' ')[0]);
      // ioredis's own command timeout (set to the budget) may fire just before ours.
      else if (message === 'Command timed out') this.markAway('timeout');
      else this.markAway('connection error', message);
      return fallback();
    }
    return outcome.value;
  }

  /**
   * `command` sent without waiting for its answer, within the budget left, else `fallback`. A failure marks
   * Redis away as for `run`; nothing is ever thrown or rejected to the caller.
   */
  send(command: () => Promise<unknown>, fallback: () => Promise<unknown>, budget?: RequestBudget): void {
    this.run(command, fallback, budget).catch(() => undefined);
  }

  /** Stops the probe and the logging (before the client is closed). */
  close(): void {
    this.closed = true;
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
  }

  private newSignal(): Promise<'away'> {
    return new Promise((resolve) => {
      this.releaseWaiters = () => resolve('away');
    });
  }

  private markAway(reason: AwayReason, detail?: string): void {
    if (this.closed || this.state === 'away') return;
    this.state = 'away';
    // Requests still waiting on a command stop waiting now: their budget is not needed to know.
    this.releaseWaiters();
    this.options.onAway?.(reason);
    // Rate-limited: a Redis that fails again after each probe would otherwise write two lines a second.
    const now = performance.now();
    this.loggedThisOutage = now - this.lastAwayLine >= AWAY_LOG_EVERY_MS;
    if (this.loggedThisOutage) {
      this.lastAwayLine = now;
      this.options.logger?.warn(
        {
          reason,
          ...(detail === undefined ? {} : { detail }),
          budgetMs: this.options.budgetMs,
          ...(this.unlogged > 0 ? { unloggedOutages: this.unlogged } : {}),
        },
        'redis away: rate limits, quota, lockouts and firewall budget count in this process only',
      );
      this.unlogged = 0;
    } else this.unlogged += 1;
    this.probeTimer = setInterval(() => this.probe(), this.options.probeMs);
    this.probeTimer.unref();
  }

  private probe(): void {
    // One probe at a time, and only on a connected client: probes never queue up behind a hung Redis.
    if (this.probing || this.redis.status !== 'ready') return;
    this.probing = true;
    void probeRedis(this.redis, this.options.probeKey).then((ms) => {
      this.probing = false;
      // Back only when the probe answers well within the budget, so a slow Redis does not flap every second.
      if (ms <= this.options.budgetMs / 4) this.markBack(ms);
    });
  }

  private markBack(probeMs: number): void {
    if (this.closed || this.state === 'up') return;
    this.state = 'up';
    this.awaySignal = this.newSignal();
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    // Only the end of an outage whose start was logged.
    if (this.loggedThisOutage) {
      this.options.logger?.info({ probeMs: Math.round(probeMs * 10) / 10 }, 'redis back: limits are shared again');
    }
  }
}

/**
 * Ms a write of `key` (expiring after 1 ms) took, or Infinity when Redis refused it or the connection failed.
 * A write, not a PING: a Redis out of memory or a read-only replica answers PING but refuses every charge.
 */
export function probeRedis(redis: Redis, key: string): Promise<number> {
  const started = performance.now();
  return redis.set(key, '1', 'PX', 1).then(
    () => performance.now() - started,
    () => Number.POSITIVE_INFINITY,
  );
}

/**
 * Redis as a process without counters of its own sees it (the primary of `serve --workers`): `up` when the
 * probe's write answers within `budgetMs`, else `away` (not connected, refusing writes, or slow).
 */
export async function redisState(redis: Redis, probeKey: string, budgetMs: number): Promise<'up' | 'away'> {
  if (redis.status !== 'ready') return 'away';
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<number>((resolve) => {
    timer = setTimeout(() => resolve(Number.POSITIVE_INFINITY), budgetMs);
  });
  const ms = await Promise.race([probeRedis(redis, probeKey), late]);
  clearTimeout(timer);
  return ms <= budgetMs ? 'up' : 'away';
}

/**
 * ioredis settings that agree with the budget: no offline queue (a request never waits for a reconnect),
 * no retried or re-sent commands, each command given up after the budget, and a connection that stops
 * answering dropped, so the commands written to it are failed rather than piled up.
 */
export function redisClientOptions(budgetMs: number) {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: budgetMs,
    socketTimeout: Math.max(1000, 4 * budgetMs),
    connectTimeout: Math.max(1000, 4 * budgetMs),
    retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
  } as const;
}
