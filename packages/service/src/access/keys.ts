import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { base62 } from '../ids.js';
import { readSetting } from '../settings.js';
import type { Entity, Store, WriteTx } from '../store/store.js';
import { AdminError } from './admin-error.js';
import type { IntegrationState } from './integration-state.js';

// Secret keys: `crmx_live_` + a 12-character lookup id + a 32-character secret, both base62 from the
// system CSPRNG (32 base62 characters carry 190.5 bits). Only HMAC-SHA-256(pepper, key) is stored.

export const KEY_PREFIX = 'crmx_live_';
export const TEST_KEY_PREFIX = 'crmx_test_';
export const LOOKUP_ID_LENGTH = 12;
export const SECRET_LENGTH = 32;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}([0-9A-Za-z]{${LOOKUP_ID_LENGTH}})[0-9A-Za-z]{${SECRET_LENGTH}}$`);

export const KEY_STATUSES = ['active', 'grace', 'expired', 'revoked'] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export const GRACE_PERIODS = ['1h', '24h', '7d'] as const;
export type GracePeriod = (typeof GRACE_PERIODS)[number];
export const DEFAULT_GRACE: GracePeriod = '24h';
const GRACE_MS: Record<GracePeriod, number> = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 };

/** State of an `api_key` entity (id = lookup id, parent = integration id). */
export interface ApiKeyState {
  /** Hex HMAC-SHA-256 of the whole key under the server pepper. */
  digest: string;
  last4: string;
  /** Stored status; a `grace` key whose `graceEndsAt` has passed reads `expired` (see `effectiveKeyStatus`). */
  status: KeyStatus;
  createdAt: string;
  graceEndsAt: string | null;
  revokedAt: string | null;
}

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
export const PEPPER_META_KEY = 'key_pepper';
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
  const stored = await store.write(async (tx) => {
    const existing = await tx.getMeta(PEPPER_META_KEY);
    if (existing) return existing;
    const fresh = randomBytes(32).toString('base64');
    await tx.setMeta(PEPPER_META_KEY, fresh);
    return fresh;
  });
  return Buffer.from(stored, 'base64');
}

export function digestKey(pepper: Buffer, key: string): string {
  return createHmac('sha256', pepper).update(key, 'utf8').digest('hex');
}

/** Constant-time comparison of a presented key with a stored digest. */
export function keyMatches(pepper: Buffer, key: string, storedDigest: string): boolean {
  const presented = createHmac('sha256', pepper).update(key, 'utf8').digest();
  const stored = Buffer.from(storedDigest, 'hex');
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}

/** The status a key has at `now`: a grace period that has ended reads `expired`. */
export function effectiveKeyStatus(state: ApiKeyState, now: number): KeyStatus {
  if (state.status === 'grace' && state.graceEndsAt !== null && now >= Date.parse(state.graceEndsAt)) return 'expired';
  return state.status;
}

/** Creates a new active key of an integration inside `tx`; returns the full key (shown once). */
export async function issueKey(
  tx: WriteTx,
  pepper: Buffer,
  integrationId: string,
  now: number,
): Promise<{ key: string; keyId: string }> {
  const lookupId = base62(LOOKUP_ID_LENGTH);
  const key = `${KEY_PREFIX}${lookupId}${base62(SECRET_LENGTH)}`;
  const state: ApiKeyState = {
    digest: digestKey(pepper, key),
    last4: key.slice(-4),
    status: 'active',
    createdAt: iso(now),
    graceEndsAt: null,
    revokedAt: null,
  };
  await tx.putEntity<ApiKeyState>({ kind: 'api_key', id: lookupId, team: null, parent: integrationId, state });
  return { key, keyId: lookupId };
}

async function activeIntegration(tx: WriteTx, integrationId: string): Promise<Entity<IntegrationState>> {
  const integration = await tx.getEntity<IntegrationState>('integration', integrationId);
  if (!integration) throw new AdminError('not_found', `no integration ${integrationId}`);
  if (integration.state.status !== 'active') {
    throw new AdminError('integration_revoked', `integration ${integrationId} is revoked`);
  }
  return integration;
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
  const pepper = await getPepper(store);
  return store.write(async (tx) => {
    await activeIntegration(tx, integrationId);
    const now = clock.now();
    let oldKeyId: string | null = null;
    let graceEndsAt: string | null = null;
    for (const old of await tx.findEntities<ApiKeyState>('api_key', { parent: integrationId })) {
      const status = effectiveKeyStatus(old.state, now);
      if (status === 'grace') {
        await tx.putEntity({ ...old, state: { ...old.state, status: 'revoked', revokedAt: iso(now) } });
      } else if (status === 'active') {
        oldKeyId = old.id;
        const state: ApiKeyState = options.compromised
          ? { ...old.state, status: 'revoked', revokedAt: iso(now) }
          : { ...old.state, status: 'grace', graceEndsAt: iso(now + GRACE_MS[grace]) };
        graceEndsAt = state.graceEndsAt;
        await tx.putEntity({ ...old, state });
      }
    }
    const { key, keyId } = await issueKey(tx, pepper, integrationId, now);
    return { key, keyId, last4: key.slice(-4), oldKeyId, graceEndsAt };
  });
}

/** Ends the grace period of the old key now: it is revoked (`401 invalid_credentials`). */
export async function endOldKey(store: Store, clock: Clock, integrationId: string): Promise<{ revoked: string[] }> {
  return store.write(async (tx) => {
    await activeIntegration(tx, integrationId);
    const now = clock.now();
    const revoked: string[] = [];
    for (const old of await tx.findEntities<ApiKeyState>('api_key', { parent: integrationId })) {
      if (effectiveKeyStatus(old.state, now) !== 'grace') continue;
      await tx.putEntity({ ...old, state: { ...old.state, status: 'revoked', revokedAt: iso(now) } });
      revoked.push(old.id);
    }
    if (revoked.length === 0)
      throw new AdminError('no_key_in_grace', `integration ${integrationId} has no key in grace`);
    return { revoked };
  });
}
