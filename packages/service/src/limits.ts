import { type Static, Type } from 'typebox';
import Value from 'typebox/value';

// Every number of the contract's limits (docs/contract.md): its default, the range an operator may set
// through `CRM_EXPORT_LIMITS`, and what it means. One TypeBox schema is the type, the defaults, the
// validation and the table in docs/configuration.md. Tests and benchmarks shorten or raise them in code; a
// fresh install uses exactly the defaults.

const DAY = 24 * 60 * 60 * 1000;

/** A limit: a whole number within [min, max] with its default and meaning. */
const limit = (fallback: number, min: number, max: number, description: string) =>
  Type.Integer({ default: fallback, minimum: min, maximum: max, description });

export const LIMITS_SCHEMA = Type.Object(
  {
    itemsPerMinute: limit(
      2000,
      1,
      10_000_000,
      'items a minute per key over list and feed endpoints (reserve and refund)',
    ),
    readRequestsPerMinute: limit(600, 1, 1_000_000, 'requests a minute per key on single-record endpoints and `/me`'),
    dailyItemQuota: limit(1_000_000, 1, 1_000_000_000, 'items per key per UTC day'),
    rateWindowSeconds: limit(
      60,
      1,
      3600,
      "length of the rate limits' window (items and read requests), seconds: the contract's minute; tests shorten it",
    ),
    authFailuresPerIp: limit(60, 1, 100_000, 'failed authentications from one address in a minute before it is locked'),
    authFailuresPerKey: limit(20, 1, 100_000, 'failed authentications with one key in a minute before it is locked'),
    authLockSeconds: limit(600, 1, 86_400, 'lock length after too many failures, seconds'),
    firewallRequestsPerMinute: limit(
      300,
      1,
      1_000_000,
      'requests a minute from one address without a well-formed key before the firewall answers 429',
    ),
    firewallLockSeconds: limit(600, 1, 86_400, 'how long the firewall keeps answering 429, seconds'),
    maxBodyBytes: limit(16 * 1024, 1024, 1024 * 1024, 'largest request body, bytes'),
    cursorLifetimeMs: limit(30 * DAY, 60_000, 365 * DAY, 'feed cursor lifetime from the point it reached (30 days)'),
    removalRetentionMs: limit(
      45 * DAY,
      60_000,
      3650 * DAY,
      'how long a removal stays in the feed (45 days); at least `cursorLifetimeMs`, so a valid cursor never misses a removal',
    ),
    supersededRetentionMs: limit(
      DAY,
      60_000,
      365 * DAY,
      'how long a superseded record entry stays in the feed, so a retried page comes back the same (1 day)',
    ),
    feedHoldBackMs: limit(10_000, 0, 600_000, 'the newest changes the feed holds back'),
    allowlistSize: limit(20, 1, 1000, 'allowlist entries per integration'),
    activeIntegrations: limit(10, 1, 10_000, 'active integrations per organization (or team outside one)'),
    keyCacheMs: limit(
      4_000,
      1,
      4_999,
      'how long a process trusts a cached key or switch before re-reading it; under 5000, so a revoked key never outlives the 5 seconds the contract allows',
    ),
    redisBudgetMs: limit(
      250,
      10,
      10_000,
      'longest a request waits on Redis in all; past it the limits count in the process memory until Redis answers again ([`limits.md`](limits.md))',
    ),
    redisProbeMs: limit(
      1_000,
      100,
      600_000,
      'how often a process whose Redis is away sends the probe (a short-lived write) that brings it back',
    ),
    headersTimeoutMs: limit(
      10_000,
      100,
      600_000,
      'time a connection has to send its whole request head; then a bare `408` and the connection is closed',
    ),
    requestTimeoutMs: limit(
      30_000,
      100,
      3_600_000,
      'time a connection has to send its whole request, head and body (at least `headersTimeoutMs`); then a bare `408`',
    ),
    idleTimeoutMs: limit(
      30_000,
      100,
      3_600_000,
      'a connection with no byte in either direction for this long is closed (also a client that stops reading a response)',
    ),
    // Above the 60 s idle timeout of common load balancers, so the balancer closes first (Fastify's default).
    keepAliveTimeoutMs: limit(
      72_000,
      100,
      3_600_000,
      'how long an idle keep-alive connection stays open after a response (above the 60 s of common load balancers)',
    ),
    shutdownGraceMs: limit(
      10_000,
      0,
      600_000,
      'on `SIGINT`/`SIGTERM`, how long requests in flight may finish before their connections are destroyed',
    ),
    workerRestartMs: limit(
      1_000,
      10,
      600_000,
      '`serve --workers`: delay before a dead worker is replaced, doubled on each further death of that worker',
    ),
    workerRestartMaxMs: limit(
      30_000,
      10,
      3_600_000,
      '`serve --workers`: the longest such delay (at least `workerRestartMs`); a worker that served this long starts again from `workerRestartMs`',
    ),
    workerStartFailures: limit(
      5,
      1,
      1000,
      '`serve --workers`: workers dying in a row before they listen, after which the primary stops and exits 1',
    ),
    requestLogRetentionMs: limit(
      7 * DAY,
      60_000,
      90 * DAY,
      'how long the request log and the usage counts are kept (7 days; [`request-log.md`](request-log.md))',
    ),
    requestLogRowsPerIntegration: limit(
      100_000,
      100,
      100_000_000,
      'request log rows kept per integration; retention drops the oldest beyond it',
    ),
    requestLogQueue: limit(
      10_000,
      100,
      1_000_000,
      'answered requests a process holds for the request log between two flushes; beyond it an entry is dropped and counted',
    ),
    requestLogFlushMs: limit(
      1_000,
      100,
      60_000,
      'how often a process writes its request log, usage counts and last uses (one short transaction)',
    ),
    intakeMaxBodyBytes: limit(
      4 * 1024 * 1024,
      1024,
      64 * 1024 * 1024,
      'largest body of an intake batch on the internal listener, bytes (`413 body_too_large`)',
    ),
    intakeMaxEvents: limit(1000, 1, 100_000, 'most events in one intake batch (`413 too_many_events`)'),
    intakeMaxEventBytes: limit(
      64 * 1024,
      256,
      16 * 1024 * 1024,
      'largest event of an intake batch, bytes of its JSON text (`413 event_too_large`); at most `intakeMaxBodyBytes`',
    ),
  },
  { additionalProperties: false },
);

export type Limits = Static<typeof LIMITS_SCHEMA>;

/** Each limit's `default`. */
export const DEFAULT_LIMITS: Limits = Object.freeze(Value.Create(LIMITS_SCHEMA));

/** Rules between two limits: `[smaller, larger, why]`; each pair must hold, `smaller <= larger`. */
export const LIMIT_ORDER: readonly (readonly [keyof Limits, keyof Limits, string])[] = [
  ['cursorLifetimeMs', 'removalRetentionMs', 'a valid cursor must never miss a removal'],
  ['headersTimeoutMs', 'requestTimeoutMs', 'the head is part of the request'],
  ['workerRestartMs', 'workerRestartMaxMs', 'the first delay cannot exceed the longest'],
  ['intakeMaxEventBytes', 'intakeMaxBodyBytes', 'an event is part of the body'],
];
