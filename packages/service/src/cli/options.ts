import { isAbsolute, resolve } from 'node:path';
import { systemClock } from '../clock.js';
import { parseTrustProxy, type TrustProxy } from '../http/trust-proxy.js';
import type { InternalAddress } from '../internal/internal-listener.js';
import type { Limits } from '../limits.js';
import type { OperatorAddress } from '../operator-listener.js';
import { ConfigError } from '../settings/config-error.js';
import { readLimits } from '../settings/read-limits.js';
import { parseSetting, readSetting } from '../settings/read-setting.js';
import { SETTINGS } from '../settings/settings.js';
import { openStore } from '../store/open-store.js';
import { DatabaseMissingError, type Store } from '../store/store.js';
import { runDataMigrations } from '../write/commands/data-migrations.js';

// The CLI's view of the settings (src/settings/): a flag wins over its variable, the variable over the
// default, and every value was checked against its schema before anything is opened.

/** Where npm or npx was started (`INIT_CWD`), else the current directory. */
export function startDir(env: NodeJS.ProcessEnv = process.env): string {
  return readSetting('initCwd', undefined, env) || process.cwd();
}

/**
 * The database URL from `--db`, else `DATABASE_URL`, else the default. A relative SQLite path is
 * resolved against the directory npm or npx was started from (`INIT_CWD`), so `npm start` (which
 * runs inside the workspace) and `npx crm-export ...` at the repository root use the same file.
 */
export function resolveDbUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  // A flag from `settingOption` is already checked; one passed in code is checked here.
  const url = flag === undefined ? (readSetting('db', undefined, env) as string) : parseSetting('db', flag, '--db');
  if (!url.startsWith('sqlite:')) return url;
  const path = url.slice('sqlite:'.length);
  if (path === '' || path === ':memory:' || isAbsolute(path)) return url;
  return `sqlite:${resolve(startDir(env), path)}`;
}

/**
 * Opens the store that `--db` / `DATABASE_URL` names. `create` (start, serve, demo, ingest, migrate)
 * creates a missing database and applies migrations, then the pending data migrations
 * (write/commands/data-migrations.ts); otherwise a database that does not exist or is not migrated is refused, so
 * a typo never yields a new empty database.
 */
export async function openDb(flag: string | undefined, { create = false } = {}): Promise<Store> {
  let store: Store;
  try {
    store = await openStore(resolveDbUrl(flag), { create, readerMmapMib: readSetting('sqliteMmap') as number });
  } catch (error) {
    if (!(error instanceof DatabaseMissingError)) throw error;
    throw new DatabaseMissingError(
      `${error.message}; check --db / DATABASE_URL, or create it with: crm-export migrate${flag ? ` --db '${flag}'` : ''}`,
    );
  }
  if (!create) return store;
  try {
    await runDataMigrations(store, systemClock);
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

/** `--port`, else `PORT`, else 3000. */
export function resolvePort(flag: number | undefined, env: NodeJS.ProcessEnv = process.env): number {
  return readSetting('port', flag, env) as number;
}

/** `--host`, else `HOST`, else 127.0.0.1 (loopback: exposing the API is an explicit choice). */
export function resolveHost(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return readSetting('host', flag, env) as string;
}

/** The limits: defaults with `CRM_EXPORT_LIMITS` applied (src/settings/). */
export function resolveLimits(env: NodeJS.ProcessEnv = process.env): Limits {
  return readLimits(env);
}

/**
 * `--trust-proxy`, else `CRM_EXPORT_TRUST_PROXY`, else none (`X-Forwarded-For` ignored). A malformed value
 * is refused with an error naming the setting it came from.
 */
export function resolveTrustProxy(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): TrustProxy | undefined {
  if (flag !== undefined) return parseTrustProxy(flag, '--trust-proxy');
  const raw = readSetting('trustProxy', undefined, env);
  if (raw === undefined || raw.trim() === '') return undefined;
  return parseTrustProxy(raw, SETTINGS.trustProxy.env);
}

/**
 * The operator listener (metrics, probes, the API reference): `--ops-port`, else `CRM_EXPORT_OPS_PORT`; on
 * `--ops-host`, else `CRM_EXPORT_OPS_HOST`, else 127.0.0.1 (metrics name routes and teams: not for the public).
 * Without a port: none for `serve`; with `apiPort` (what `start` passes), the API port plus one, or any free
 * port when that one is in use, when the API takes any free port (0) or when it is 65535.
 */
export function resolveOps(
  opts: { opsHost?: string; opsPort?: number },
  env: NodeJS.ProcessEnv = process.env,
  apiPort?: number,
): OperatorAddress | undefined {
  const port = readSetting('opsPort', opts.opsPort, env) as number | undefined;
  const host = () => readSetting('opsHost', opts.opsHost, env) as string;
  if (port !== undefined) return { host: host(), port };
  if (apiPort !== undefined) {
    return { host: host(), port: apiPort === 0 || apiPort === 65535 ? 0 : apiPort + 1, orFreePort: true };
  }
  if (opts.opsHost !== undefined) throw new ConfigError('--ops-host needs --ops-port (or CRM_EXPORT_OPS_PORT)');
  return undefined;
}

/**
 * The internal listener (intake, management API, console): `--internal-port`, else `INTERNAL_PORT`; on
 * `--internal-host`, else `INTERNAL_HOST`, else 127.0.0.1 (operator tokens change data: never public).
 * Without a port: none for `serve`; with `apiPort` (what `start` passes), the API port plus two, or any free
 * port when that one is in use, when the API takes any free port (0) or when it is above 65533.
 */
export function resolveInternal(
  opts: { internalHost?: string; internalPort?: number },
  env: NodeJS.ProcessEnv = process.env,
  apiPort?: number,
): InternalAddress | undefined {
  const port = readSetting('internalPort', opts.internalPort, env) as number | undefined;
  const host = () => readSetting('internalHost', opts.internalHost, env) as string;
  if (port !== undefined) return { host: host(), port };
  if (apiPort !== undefined) {
    return { host: host(), port: apiPort === 0 || apiPort > 65533 ? 0 : apiPort + 2, orFreePort: true };
  }
  if (opts.internalHost !== undefined) {
    throw new ConfigError('--internal-host needs --internal-port (or INTERNAL_PORT)');
  }
  return undefined;
}

/** Where and how `serve` and `start` listen, resolved before anything is opened so a bad setting fails first. */
export function serverSettings(
  opts: {
    host?: string;
    port?: number;
    trustProxy?: string;
    opsHost?: string;
    opsPort?: number;
    docsUrl?: string;
    internalHost?: string;
    internalPort?: number;
  },
  env: NodeJS.ProcessEnv = process.env,
  /** `start` opens the operator and internal listeners by default (resolveOps, resolveInternal); `serve` only when configured. */
  { opsByDefault = false } = {},
) {
  const trustProxy = resolveTrustProxy(opts.trustProxy, env);
  const redisUrl = readSetting('redisUrl', undefined, env);
  const port = resolvePort(opts.port, env);
  const ops = resolveOps(opts, env, opsByDefault ? port : undefined);
  const internal = resolveInternal(opts, env, opsByDefault ? port : undefined);
  const docsUrl = resolveDocsUrl(opts.docsUrl, env);
  return {
    host: resolveHost(opts.host, env),
    port,
    limits: resolveLimits(env),
    logLevel: readSetting('logLevel', undefined, env) as string,
    ...(redisUrl ? { redisUrl } : {}),
    ...(trustProxy ? { trustProxy } : {}),
    ...(ops ? { ops } : {}),
    ...(internal ? { internal } : {}),
    ...(docsUrl ? { docsUrl } : {}),
  };
}

/**
 * `--docs-url`, else `CRM_EXPORT_DOCS_URL`, without a trailing slash; undefined when neither is set (the
 * server then links to the `/docs` its operator listener serves, or without one to DEFAULT_DOCS_URL).
 */
export function resolveDocsUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  // A flag from `settingOption` is already checked; one passed in code is checked here.
  const url = flag === undefined ? readSetting('docsUrl', undefined, env) : parseSetting('docsUrl', flag, '--docs-url');
  return url === undefined ? undefined : url.replace(/\/+$/, '');
}

/** What `serve` and `start` print about the internal listener (before the line tests and scripts wait for). */
export const internalLine = (origin: string): string =>
  `internal listener: ${origin} (intake /intake/v1, management /manage/v1, console /console)\n`;

/** What `serve` and `start` print about the operator listener (before the line tests and scripts wait for). */
export const opsLine = (origin: string): string =>
  `operator listener: ${origin} (/metrics, /livez, /readyz, API reference at /docs/)\n`;
