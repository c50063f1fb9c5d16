import { isAbsolute, resolve } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { DEFAULT_LIMITS, type Limits } from '../config.js';
import { DEFAULT_DB_URL, openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 3000;

/**
 * The database URL from `--db`, else `DATABASE_URL`, else the default. A relative SQLite path is
 * resolved against the directory npm or npx was started from (`INIT_CWD`), so `npm start` (which
 * runs inside the workspace) and `npx crm-export ...` at the repository root use the same file.
 */
export function resolveDbUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const url = flag ?? env.DATABASE_URL ?? DEFAULT_DB_URL;
  if (!url.startsWith('sqlite:')) return url;
  const path = url.slice('sqlite:'.length);
  if (path === ':memory:' || isAbsolute(path)) return url;
  return `sqlite:${resolve(env.INIT_CWD ?? process.cwd(), path)}`;
}

/** Opens (and migrates) the store that `--db` / `DATABASE_URL` names. */
export function openDb(flag: string | undefined): Promise<Store> {
  return openStore(resolveDbUrl(flag));
}

/** Commander argument parser for a whole number within bounds. */
export function intOption(min: number, max: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`Not a whole number between ${min} and ${max}.`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`Not a whole number between ${min} and ${max}.`);
    return n;
  };
}

/** `--port`, else `PORT`, else 3000. */
export function resolvePort(flag: number | undefined, env: NodeJS.ProcessEnv = process.env): number {
  if (flag !== undefined) return flag;
  if (env.PORT === undefined || env.PORT === '') return DEFAULT_PORT;
  return intOption(0, 65535)(env.PORT);
}

/** `--host`, else `HOST`, else 127.0.0.1 (loopback: exposing the API is an explicit choice). */
export function resolveHost(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return flag ?? (env.HOST || DEFAULT_HOST);
}

/**
 * The limits a server runs with: the spec's defaults, with any member overridden by the JSON object in
 * `CRM_EXPORT_LIMITS` (for example `{"itemsPerMinute":5000}`). Unknown names and values that are not
 * positive whole numbers are refused, so a typo never silently keeps a default.
 */
export function resolveLimits(env: NodeJS.ProcessEnv = process.env): Limits {
  const raw = env.CRM_EXPORT_LIMITS;
  if (raw === undefined || raw.trim() === '') return DEFAULT_LIMITS;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('CRM_EXPORT_LIMITS is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('CRM_EXPORT_LIMITS must be a JSON object');
  }
  const limits: Limits = { ...DEFAULT_LIMITS };
  for (const [name, value] of Object.entries(parsed)) {
    if (!(name in DEFAULT_LIMITS)) {
      throw new Error(`CRM_EXPORT_LIMITS: unknown limit ${name} (known: ${Object.keys(DEFAULT_LIMITS).join(', ')})`);
    }
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
      throw new Error(`CRM_EXPORT_LIMITS: ${name} must be a positive whole number`);
    }
    limits[name as keyof Limits] = value;
  }
  return limits;
}

/** Where and how `serve` and `start` listen, resolved before anything is opened so a bad setting fails first. */
export function serverSettings(opts: { host?: string; port?: number }, env: NodeJS.ProcessEnv = process.env) {
  return {
    host: resolveHost(opts.host, env),
    port: resolvePort(opts.port, env),
    limits: resolveLimits(env),
    ...(env.REDIS_URL ? { redisUrl: env.REDIS_URL } : {}),
  };
}
