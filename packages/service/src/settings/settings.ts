// Kept whole: the one table of settings, read top to bottom as the configuration reference is generated.
import pino from 'pino';
import { type Static, type TSchema, Type } from 'typebox';
import Format from 'typebox/format';
import { DEFAULT_DEMO_LEADS, DEFAULT_DEMO_TEAMS, DEMO_BATCH } from '../demo/demo-defaults.js';
import { DEFAULT_INGEST_BATCH, DEFAULT_STDIN_LIMIT_MIB } from '../ingest/ingest-defaults.js';
import { SQLITE_DEFAULTS } from '../store/backend-defaults.js';

// Every setting of `crm-export`: each environment variable and each flag that changes how a command runs,
// with its TypeBox schema (type, range, default), in one table. Only this folder reads `process.env`
// (read-setting.ts, read-limits.ts). A bad value stops the command with a `ConfigError` naming the flag or
// variable and the allowed values.
// Adding a setting is one entry in SETTINGS (docs/configuration.md is generated from it).

/** `sqlite:PATH` (`sqlite::memory:` included) or a `postgres://` / `postgresql://` URL that parses. */
Format.Set('crm-database-url', (value) => {
  if (value.startsWith('sqlite:')) return true;
  if (!/^postgres(ql)?:\/\//.test(value)) return false;
  return URL.canParse(value);
});
/** A `postgres://` / `postgresql://` URL that parses. */
Format.Set('crm-postgres-url', (value) => /^postgres(ql)?:\/\//.test(value) && URL.canParse(value));
/** `redis://` or `rediss://` with a host, parsed as a URL. */
Format.Set('crm-redis-url', (value) => {
  if (!/^rediss?:\/\//.test(value) || !URL.canParse(value)) return false;
  return new URL(value).hostname !== '';
});
/** An address to listen on: IPv4, IPv6 or a host name. */
Format.Set('crm-listen-host', (value) => Format.IsIPv4(value) || Format.IsIPv6(value) || Format.IsHostname(value));
/** An absolute http(s) URL without query or fragment: where the error pages are published. */
Format.Set('crm-docs-url', (value) => {
  if (!/^https?:\/\//.test(value) || !URL.canParse(value)) return false;
  const url = new URL(value);
  return url.hostname !== '' && url.search === '' && url.hash === '' && !value.includes('#');
});
/** An instant `Date.parse` understands (ISO 8601). */
Format.Set('crm-instant', (value) => !Number.isNaN(Date.parse(value)));

export const LOG_LEVELS = [...Object.keys(pino.levels.values), 'silent'] as const;

const int = (min: number, max: number, fallback?: number) =>
  Type.Integer({ minimum: min, maximum: max, ...(fallback === undefined ? {} : { default: fallback }) });

export interface Setting {
  /** The commander flag, e.g. `--port <port>`. */
  flag?: string;
  /** The environment variable. */
  env?: string;
  /** Type, range and default. Integers are read from whole decimal numbers only. */
  schema: TSchema;
  /** The allowed values in words, when the schema does not say it (integer ranges and literal lists do). */
  allowed?: string;
  /** What it does (flag help and docs). */
  help: string;
  /** Commands that read it (docs). */
  usedBy: string;
  /** Set by npm or by `crm-export` itself, not by an operator. */
  internal?: boolean;
}

export const SETTINGS = {
  db: {
    flag: '--db <url>',
    env: 'DATABASE_URL',
    schema: Type.String({ format: 'crm-database-url', default: 'sqlite:./data/crm-export.db' }),
    allowed: 'sqlite:PATH, sqlite::memory:, postgres://... or postgresql://...',
    help: 'database URL',
    usedBy: 'every command with a database',
  },
  sqliteMmap: {
    env: 'CRM_EXPORT_SQLITE_MMAP_MIB',
    schema: int(0, 2048, SQLITE_DEFAULTS.readerMmapMib),
    help: 'MiB of a SQLite database file mapped into memory for reading (0: read through the file); mapped pages count in RSS as file-backed memory',
    usedBy: 'every command with a SQLite database',
  },
  host: {
    flag: '--host <host>',
    env: 'HOST',
    schema: Type.String({ format: 'crm-listen-host', default: '127.0.0.1' }),
    allowed: 'an IPv4 or IPv6 address or a host name',
    help: 'address to listen on',
    usedBy: '`serve`, `start`',
  },
  port: {
    flag: '--port <port>',
    env: 'PORT',
    schema: int(0, 65535, 3000),
    help: 'port to listen on, 0 for any free port',
    usedBy: '`serve`, `start`',
  },
  opsPort: {
    flag: '--ops-port <port>',
    env: 'CRM_EXPORT_OPS_PORT',
    schema: int(0, 65535),
    help: 'operator listener for /metrics, /livez, /readyz and the API reference (/docs/), 0 for any free port; unset, none for `serve`, and for `start` the API port plus one (any free port when that one is in use or the API port is 0)',
    usedBy: '`serve`, `start`',
  },
  opsHost: {
    flag: '--ops-host <host>',
    env: 'CRM_EXPORT_OPS_HOST',
    schema: Type.String({ format: 'crm-listen-host', default: '127.0.0.1' }),
    allowed: 'an IPv4 or IPv6 address or a host name',
    help: 'address of the operator listener (metrics name routes and teams: keep it off the public network)',
    usedBy: '`serve` (with an operator port), `start`',
  },
  internalPort: {
    flag: '--internal-port <port>',
    env: 'INTERNAL_PORT',
    schema: int(0, 65535),
    help: 'internal listener for intake (/intake/v1), the management API (/manage/v1) and the console (/console), 0 for any free port; unset, none for `serve`, and for `start` the API port plus two (any free port when that one is in use or the API port is 0)',
    usedBy: '`serve`, `start`',
  },
  internalHost: {
    flag: '--internal-host <host>',
    env: 'INTERNAL_HOST',
    schema: Type.String({ format: 'crm-listen-host', default: '127.0.0.1' }),
    allowed: 'an IPv4 or IPv6 address or a host name',
    help: 'address of the internal listener (operator tokens change data: keep it off the public network)',
    usedBy: '`serve` (with an internal port), `start`',
  },
  trustProxy: {
    flag: '--trust-proxy <proxies>',
    env: 'CRM_EXPORT_TRUST_PROXY',
    schema: Type.String(),
    allowed: 'IP addresses and CIDR ranges (comma-separated), or a hop count 1-10',
    help: 'proxies whose X-Forwarded-For is believed; unset, none is',
    usedBy: '`serve`, `start`',
  },
  docsUrl: {
    flag: '--docs-url <url>',
    env: 'CRM_EXPORT_DOCS_URL',
    schema: Type.String({ format: 'crm-docs-url' }),
    allowed: 'an http:// or https:// URL without query or fragment',
    help: "where clients read the published error page: problem bodies' `type` and `doc_url` are `<url>/errors#<code>`; unset, `tag:crm-export,2026:errors#<code>`, a name and not a link (never the operator listener's address)",
    usedBy: '`serve`, `start`',
  },
  workers: {
    flag: '--workers <n>',
    schema: int(1, 64, 1),
    help: 'API processes sharing the port, the database and Redis (more than 1 needs REDIS_URL)',
    usedBy: '`serve`',
  },
  limits: {
    env: 'CRM_EXPORT_LIMITS',
    schema: Type.String(),
    allowed: 'a JSON object of limits (table below)',
    help: 'limits that differ from the defaults',
    usedBy: '`serve`, `start`, `admin feed trim`, `admin integrations usage`',
  },
  redisUrl: {
    flag: '--redis <url>',
    env: 'REDIS_URL',
    schema: Type.String({ format: 'crm-redis-url' }),
    allowed: 'redis://... or rediss://...',
    help: 'Redis shared by the API processes (default: none, counters in process memory)',
    usedBy: '`serve`, `start`; the flag: `admin integrations usage`',
  },
  redisPrefix: {
    flag: '--redis-prefix <prefix>',
    schema: Type.String({ pattern: '^[A-Za-z0-9_:.-]{1,64}$', default: 'crmx' }),
    allowed: '1-64 letters, digits, _, :, ., -',
    help: 'key prefix of the API processes in Redis',
    usedBy: '`admin integrations usage`',
  },
  logLevel: {
    env: 'LOG_LEVEL',
    schema: Type.Unsafe<string>(
      Type.Union(
        LOG_LEVELS.map((level) => Type.Literal(level)),
        { default: 'info' },
      ),
    ),
    help: 'pino level of the JSON logs on standard error',
    usedBy: '`serve`, `start`',
  },
  requestLog: {
    env: 'REQUEST_LOG',
    schema: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
    help: 'record last use, usage counts and the request log of each integration ([`request-log.md`](request-log.md)); off records none of them',
    usedBy: '`serve`, `start`',
  },
  pepper: {
    env: 'CRM_EXPORT_PEPPER',
    schema: Type.String({ minLength: 1 }),
    allowed: 'any text',
    help: 'pepper of key digests (default: generated once and kept in the database)',
    usedBy: 'every command that creates or checks keys',
  },
  startLeads: {
    flag: '--leads <n>',
    schema: int(1, 1_000_000, 200),
    help: 'demo leads per team on the first start',
    usedBy: '`start`',
  },
  demoTeams: {
    flag: '--teams <n>',
    schema: int(1, 100, DEFAULT_DEMO_TEAMS),
    help: 'example teams of the one organization',
    usedBy: '`demo`',
  },
  demoLeads: {
    flag: '--leads <n>',
    schema: int(0, 1_000_000, DEFAULT_DEMO_LEADS),
    help: 'leads per team',
    usedBy: '`demo`',
  },
  demoSeed: {
    flag: '--seed <s>',
    schema: int(0, 2 ** 31 - 1),
    help: 'the same seed gives the same records and ids (default: random, printed)',
    usedBy: '`demo`',
  },
  demoNow: {
    flag: '--now <iso>',
    schema: Type.String({ format: 'crm-instant' }),
    allowed: 'an ISO 8601 date-time',
    help: 'business times of the demo end here (default: today 00:00 UTC)',
    usedBy: '`demo`',
  },
  demoBatchSize: {
    flag: '--batch-size <n>',
    schema: int(1, 100_000, DEMO_BATCH),
    help: 'events per transaction',
    usedBy: '`demo`',
  },
  ingestBatchSize: {
    flag: '--batch-size <n>',
    schema: int(1, 1_000_000, DEFAULT_INGEST_BATCH),
    help: 'events per transaction',
    usedBy: '`ingest`',
  },
  ingestStdinLimit: {
    flag: '--stdin-limit <MiB>',
    schema: int(1, 65_536, DEFAULT_STDIN_LIMIT_MIB),
    help: 'MiB of events (content dropped) held in memory while standard input is validated',
    usedBy: '`ingest -`',
  },
  relayOutboxUrl: {
    flag: '--outbox-url <url>',
    env: 'CRM_EXPORT_OUTBOX_URL',
    schema: Type.String({ format: 'crm-postgres-url' }),
    allowed: 'postgres://... or postgresql://...',
    help: "the CRM's own PostgreSQL, where its outbox table is",
    usedBy: '`relay`',
  },
  relayOutboxTable: {
    flag: '--outbox-table <name>',
    schema: Type.String({
      pattern: '^([a-z_][a-z0-9_]{0,62}\\.)?[a-z_][a-z0-9_]{0,62}$',
      default: 'crm_export_outbox',
    }),
    allowed: 'a lower-case table name, optionally schema.table',
    help: 'the outbox table (docs/intake.md)',
    usedBy: '`relay`',
  },
  relayIntakeUrl: {
    flag: '--intake-url <url>',
    env: 'CRM_EXPORT_INTAKE_URL',
    schema: Type.String({ format: 'crm-docs-url' }),
    allowed: 'an http:// or https:// URL without query or fragment',
    help: "the service's internal listener, e.g. http://127.0.0.1:3002",
    usedBy: '`relay`',
  },
  relayToken: {
    flag: '--token <token>',
    env: 'CRM_EXPORT_INTAKE_TOKEN',
    schema: Type.String({ minLength: 1 }),
    allowed: 'an operator token with the intake scope',
    help: 'the intake token (prefer the variable: a flag shows in the process list); never logged',
    usedBy: '`relay`',
  },
  relaySource: {
    flag: '--source <name>',
    env: 'CRM_EXPORT_INTAKE_SOURCE',
    schema: Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,63}$', default: 'crm-main' }),
    allowed: '1-64 of a-z, 0-9, ., _, -, starting with a letter or digit',
    help: 'the source name the events are posted under',
    usedBy: '`relay`',
  },
  relayBatch: {
    flag: '--batch <n>',
    schema: int(1, 10_000, 500),
    help: 'outbox rows per post at most',
    usedBy: '`relay`',
  },
  relayPollInterval: {
    flag: '--poll-interval <ms>',
    schema: int(10, 60_000, 200),
    help: 'milliseconds between two reads of the outbox when it had nothing new',
    usedBy: '`relay`',
  },
  relayMaxBackoff: {
    flag: '--max-backoff <ms>',
    schema: int(100, 600_000, 30_000),
    help: 'longest wait between two attempts after a refusal (429, 503) or a lost connection',
    usedBy: '`relay`',
  },
  relayMetricsPort: {
    flag: '--metrics-port <port>',
    env: 'CRM_EXPORT_RELAY_METRICS_PORT',
    schema: int(0, 65535),
    help: "the relay's /metrics and /livez, 0 for any free port; unset, none",
    usedBy: '`relay`',
  },
  relayMetricsHost: {
    flag: '--metrics-host <host>',
    schema: Type.String({ format: 'crm-listen-host', default: '127.0.0.1' }),
    allowed: 'an IPv4 or IPv6 address or a host name',
    help: "address of the relay's metrics listener",
    usedBy: '`relay`',
  },
  workerIndex: {
    env: 'CRM_EXPORT_WORKER_INDEX',
    schema: int(0, 63),
    help: 'set by `serve --workers` on each worker process',
    usedBy: '`serve --workers`',
    internal: true,
  },
  initCwd: {
    env: 'INIT_CWD',
    schema: Type.String(),
    allowed: 'a directory',
    help: 'set by npm: the directory npm or npx was started from; relative SQLite paths and files are resolved there',
    usedBy: 'every command',
    internal: true,
  },
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;
export type SettingValue<N extends SettingName> = Static<(typeof SETTINGS)[N]['schema']>;
