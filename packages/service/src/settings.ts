import { InvalidArgumentError, Option } from 'commander';
import pino from 'pino';
import { type Static, type TSchema, Type } from 'typebox';
import { Compile } from 'typebox/compile';
import Format from 'typebox/format';
import Value from 'typebox/value';
import { DEFAULT_DEMO_LEADS, DEFAULT_DEMO_TEAMS, DEMO_BATCH } from './demo/demo-defaults.js';
import { DEFAULT_INGEST_BATCH, DEFAULT_STDIN_LIMIT_MIB } from './ingest/ingest-defaults.js';
import { DEFAULT_LIMITS, LIMIT_ORDER, LIMITS_SCHEMA, type Limits } from './limits.js';
import { SQLITE_DEFAULTS } from './store/backend-defaults.js';

// Every setting of `crm-export`: each environment variable and each flag that changes how a command runs,
// with its TypeBox schema (type, range, default), in one table. Nothing else reads `process.env`. A bad
// value stops the command with a `ConfigError` naming the flag or variable and the allowed values.
// Adding a setting is one entry in SETTINGS (docs/configuration.md is generated from it).

/** A setting refused: the message names the flag or variable, the allowed values and what was given. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** `sqlite:PATH` (`sqlite::memory:` included) or a `postgres://` / `postgresql://` URL that parses. */
Format.Set('crm-database-url', (value) => {
  if (value.startsWith('sqlite:')) return true;
  if (!/^postgres(ql)?:\/\//.test(value)) return false;
  return URL.canParse(value);
});
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

const checkers = new Map<TSchema, ReturnType<typeof Compile>>();
function checker(schema: TSchema) {
  let found = checkers.get(schema);
  if (!found) {
    found = Compile(schema);
    checkers.set(schema, found);
  }
  return found;
}

interface Described {
  type?: string;
  minimum?: number;
  maximum?: number;
  anyOf?: { const?: unknown }[];
  default?: unknown;
}

/** The allowed values in words: `an integer 0-65535`, `one of a, b`, or the setting's own words. */
export function allowedValues(schema: TSchema, words?: string): string {
  const s = schema as Described;
  if (s.type === 'integer') return `an integer ${s.minimum}-${s.maximum}`;
  if (s.anyOf) return `one of ${s.anyOf.map((member) => String(member.const)).join(', ')}`;
  return words ?? 'text';
}

function allowedOf(name: SettingName): string {
  const setting: Setting = SETTINGS[name];
  return allowedValues(setting.schema, setting.allowed);
}

/** Validates (and converts) one raw value against the setting's schema; `source` names it in the error. */
export function parseSetting<N extends SettingName>(name: N, raw: string, source: string): SettingValue<N> {
  const setting: Setting = SETTINGS[name];
  const fail = () => new ConfigError(`${source} must be ${allowedOf(name)} (got ${JSON.stringify(raw)})`);
  let value: unknown = raw;
  if ((setting.schema as Described).type === 'integer') {
    if (!/^\d+$/.test(raw)) throw fail();
    value = Value.Convert(setting.schema, raw);
  }
  if (!checker(setting.schema).Check(value)) throw fail();
  return value as SettingValue<N>;
}

/** The schema's default, if it has one. */
export function settingDefault<N extends SettingName>(name: N): SettingValue<N> | undefined {
  return (SETTINGS[name].schema as Described).default as SettingValue<N> | undefined;
}

/**
 * A setting's value: the flag (already parsed by `settingOption`), else its environment variable (an empty
 * one counts as unset), else the schema's default, else undefined.
 */
export function readSetting<N extends SettingName>(
  name: N,
  flag?: SettingValue<N>,
  env: NodeJS.ProcessEnv = process.env,
): SettingValue<N> | undefined {
  if (flag !== undefined) return flag;
  const variable = (SETTINGS[name] as Setting).env;
  const raw = variable === undefined ? undefined : env[variable];
  if (raw !== undefined && raw !== '') return parseSetting(name, raw, variable as string);
  return settingDefault(name);
}

/** The commander option of a setting's flag: parsed with the same schema; flag-only settings get their default. */
export function settingOption(name: SettingName, help?: string): Option {
  const setting: Setting = SETTINGS[name];
  if (!setting.flag) throw new Error(`setting ${name} has no flag`);
  const flagName = setting.flag.split(' ')[0] as string;
  const fallback = settingDefault(name);
  // Commander prints the default of a flag-only setting itself.
  const fallbackWords = fallback === undefined ? '' : `, else ${String(fallback)}`;
  const defaultWords = setting.env ? `; default: ${setting.env}${fallbackWords}` : '';
  const text = `${help ?? setting.help} (${allowedOf(name)}${defaultWords})`;
  const option = new Option(setting.flag, text).argParser((raw: string) => {
    try {
      return parseSetting(name, raw, flagName);
    } catch (error) {
      throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
    }
  });
  // With an environment variable the default is applied by `readSetting`, after the variable.
  if (!setting.env && fallback !== undefined) option.default(fallback);
  return option;
}

/**
 * The limits a server runs with: the defaults, with any member overridden by the JSON object in
 * `CRM_EXPORT_LIMITS` (for example `{"itemsPerMinute":5000}`), each checked against its range and the rules
 * between limits, so a typo or an unsafe value never passes silently.
 */
export function readLimits(env: NodeJS.ProcessEnv = process.env): Limits {
  const raw = readSetting('limits', undefined, env);
  if (raw === undefined || raw.trim() === '') return DEFAULT_LIMITS;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('CRM_EXPORT_LIMITS must be a JSON object (got text that is not JSON)');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`CRM_EXPORT_LIMITS must be a JSON object (got ${JSON.stringify(parsed)})`);
  }
  const known = LIMITS_SCHEMA.properties as Record<string, TSchema>;
  for (const [name, value] of Object.entries(parsed)) {
    // Own names only: `toString`, `constructor` or `__proto__` are found on every object's prototype.
    const schema = Object.hasOwn(known, name) ? known[name] : undefined;
    if (!schema) {
      throw new ConfigError(
        `CRM_EXPORT_LIMITS: unknown limit ${name} (known: ${Object.keys(DEFAULT_LIMITS).join(', ')})`,
      );
    }
    if (!checker(schema).Check(value)) {
      throw new ConfigError(
        `CRM_EXPORT_LIMITS: ${name} must be ${allowedValues(schema)} (got ${JSON.stringify(value)})`,
      );
    }
  }
  const limits = { ...DEFAULT_LIMITS, ...(parsed as Partial<Limits>) };
  for (const [smaller, larger, why] of LIMIT_ORDER) {
    if (limits[smaller] > limits[larger]) {
      throw new ConfigError(
        `CRM_EXPORT_LIMITS: ${smaller} (${limits[smaller]}) must not exceed ${larger} (${limits[larger]}): ${why}`,
      );
    }
  }
  return limits;
}

const cell = (text: string) => text.replaceAll('|', '\\|');

/** The settings table of docs/configuration.md, generated from SETTINGS. */
export function settingsTable(): string {
  const rows = (Object.keys(SETTINGS) as SettingName[]).map((name) => {
    const setting: Setting = SETTINGS[name];
    const fallback = settingDefault(name);
    return `| ${setting.flag ? `\`${setting.flag}\`` : ''} | ${setting.env ? `\`${setting.env}\`` : ''} | ${setting.usedBy} | ${cell(allowedOf(name))} | ${fallback === undefined ? '' : `\`${String(fallback)}\``} | ${cell(setting.help)}${setting.internal ? ' (not an operator setting)' : ''} |`;
  });
  return ['| Flag | Variable | Used by | Allowed | Default | Meaning |', '|---|---|---|---|---|---|', ...rows].join(
    '\n',
  );
}

/** The limits table of docs/configuration.md, generated from LIMITS_SCHEMA. */
export function limitsTable(): string {
  const rows = Object.entries(LIMITS_SCHEMA.properties as Record<string, TSchema & Described>).map(
    ([name, schema]) =>
      `| \`${name}\` | ${schema.default} | ${schema.minimum}-${schema.maximum} | ${cell(String((schema as { description?: string }).description))} |`,
  );
  return ['| Name | Default | Allowed | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** The document holding the generated tables, from the repository root. */
export const CONFIG_DOC_PATH = 'docs/configuration.md';

/** The generated blocks of the configuration document: marker name and table. */
export function generatedTables(): Record<'settings' | 'limits', string> {
  return { settings: settingsTable(), limits: limitsTable() };
}

/** The document with each `<!-- NAME:begin ... -->` ... `<!-- NAME:end -->` block replaced by its table. */
export function withGeneratedTables(doc: string): string {
  let out = doc;
  for (const [name, table] of Object.entries(generatedTables())) {
    const pattern = new RegExp(`(<!-- ${name}:begin[^\\n]*-->\\n)[\\s\\S]*?(<!-- ${name}:end -->)`);
    if (!pattern.test(out)) throw new Error(`${CONFIG_DOC_PATH} has no ${name}:begin/end markers`);
    out = out.replace(pattern, (_, begin: string, end: string) => `${begin}${table}\n${end}`);
  }
  return out;
}
