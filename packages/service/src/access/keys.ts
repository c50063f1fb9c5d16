import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import { AdminError } from '../errors/admin-error.js';
import { readSetting } from '../settings/read-setting.js';
import type { Store } from '../store/store.js';
import { drawSecret, runCommand } from '../write/commands/commands.js';
import {
  DEFAULT_GRACE,
  drawKey,
  GRACE_PERIODS,
  type GracePeriod,
  KEY_PREFIX,
  LOOKUP_ID_LENGTH,
  SECRET_LENGTH,
} from '../write/commands/key-state.js';

// Secret keys: `crmx_live_` + a 12-character lookup id + a 32-character secret, both base62 from the
// system CSPRNG (32 base62 characters carry 190.5 bits). Only HMAC-SHA-256(pepper, key) is stored.

export const TEST_KEY_PREFIX = 'crmx_test_';
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}([0-9A-Za-z]{${LOOKUP_ID_LENGTH}})[0-9A-Za-z]{${SECRET_LENGTH}}$`);

/** The lookup id of a well-formed live key, or null. */
export function parseKey(key: string): { lookupId: string } | null {
  const match = KEY_PATTERN.exec(key);
  return match?.[1] ? { lookupId: match[1] } : null;
}

/** True for anything that presents itself as one of our secret keys (live or test prefix). */
export function looksLikeSecretKey(token: string): boolean {
  return token.startsWith(KEY_PREFIX) || token.startsWith(TEST_KEY_PREFIX);
}

/** `Bearer`, in any case (RFC 9110: the scheme is case-insensitive), one or more spaces, one token. */
const BEARER = /^Bearer +(\S+) *$/i;
const KEY_SHAPE = new RegExp(`^(?:${KEY_PREFIX}|${TEST_KEY_PREFIX})[0-9A-Za-z]+$`);

/** The token of an `Authorization` header, or undefined when it is absent or not a Bearer credential. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];
}

/**
 * The firewall's test: a Bearer credential of the documented shape (either prefix, then base62). Parses
 * the header exactly as authentication does, so no key authentication accepts counts as malformed.
 */
export function hasWellFormedKey(authorization: string | undefined): boolean {
  const token = bearerToken(authorization);
  return token !== undefined && KEY_SHAPE.test(token);
}
const peppers = new WeakMap<Store, Promise<Buffer>>();

/**
 * The server pepper: `CRM_EXPORT_PEPPER` when set (kept apart from the database, so a stolen database alone
 * cannot test guesses), otherwise generated once and kept in the store's meta table (zero setup; the digests
 * then only rely on the 190-bit secrets, which no guessing reaches). Changing it invalidates every key.
 */
export function getPepper(store: Store): Promise<Buffer> {
  let pepper = peppers.get(store);
  if (!pepper) {
    pepper = loadPepper(store);
    pepper.catch(() => peppers.delete(store));
    peppers.set(store, pepper);
  }
  return pepper;
}

async function loadPepper(store: Store): Promise<Buffer> {
  const fromEnv = readSetting('pepper');
  if (fromEnv) return Buffer.from(fromEnv, 'utf8');
  const stored = await runCommand(store, 'secret.pepper', { fresh: drawSecret('base64') });
  return Buffer.from(stored, 'base64');
}

/** Constant-time comparison of a presented key with a stored digest. */
export function keyMatches(pepper: Buffer, key: string, storedDigest: string): boolean {
  const presented = createHmac('sha256', pepper).update(key, 'utf8').digest();
  const stored = Buffer.from(storedDigest, 'hex');
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}

/**
 * The key each connection last presented that matched its digest, so that a keep-alive client's next
 * requests skip the HMAC (a real share of a single lead's CPU, docs/performance.md). Kept in
 * memory only, for the connection's life (a WeakMap on its socket), and compared in constant time: behind a
 * proxy one connection carries many clients' requests, and none may learn another's key from the timing.
 * Only the HMAC is skipped; every other check of the key (status, integration, allowlist) runs as before,
 * and a memo counts only for the same stored digest.
 */
export class ConnectionKeys {
  private readonly byConnection = new WeakMap<object, { key: Buffer; digest: string }>();

  constructor(private readonly check: typeof keyMatches = keyMatches) {}

  matches(connection: object | undefined, pepper: Buffer, key: string, storedDigest: string): boolean {
    if (connection === undefined) return this.check(pepper, key, storedDigest);
    const presented = Buffer.from(key, 'utf8');
    const memo = this.byConnection.get(connection);
    if (
      memo !== undefined &&
      memo.digest === storedDigest &&
      memo.key.length === presented.length &&
      timingSafeEqual(memo.key, presented)
    ) {
      return true;
    }
    if (!this.check(pepper, key, storedDigest)) return false;
    this.byConnection.set(connection, { key: presented, digest: storedDigest });
    return true;
  }
}

export interface RollOptions {
  grace?: GracePeriod;
  /** The old key leaked: revoke it now instead of giving it a grace period. */
  compromised?: boolean;
}

/**
 * Rolls an integration's key (key lifecycle table): the active key enters its grace period (or is revoked
 * at once when compromised); a key still in grace from an earlier roll is revoked. Returns the new key.
 */
export async function rollKey(
  store: Store,
  clock: Clock,
  integrationId: string,
  options: RollOptions = {},
): Promise<{ key: string; keyId: string; last4: string; oldKeyId: string | null; graceEndsAt: string | null }> {
  const grace = options.grace ?? DEFAULT_GRACE;
  if (!GRACE_PERIODS.includes(grace)) throw new AdminError('invalid_argument', `grace must be one of ${GRACE_PERIODS}`);
  const drawn = drawKey(await getPepper(store));
  const rolled = await runCommand(store, 'key.roll', {
    integration: integrationId,
    grace,
    compromised: options.compromised ?? false,
    key: { keyId: drawn.keyId, digest: drawn.digest, last4: drawn.last4 },
    now: clock.now(),
  });
  return { key: drawn.key, ...rolled };
}

/** Ends the grace period of the old key now: it is revoked (`401 invalid_credentials`). */
export async function endOldKey(store: Store, clock: Clock, integrationId: string): Promise<{ revoked: string[] }> {
  return runCommand(store, 'key.end_old', { integration: integrationId, now: clock.now() });
}
