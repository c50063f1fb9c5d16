import { createHmac } from 'node:crypto';
import { base62 } from '../../ids.js';

// The state of an `api_key` entity and the pieces of the key format the write side needs to store one.
// Request-time checks (access/keys.ts) read the same state; the commands that change it live in write/.

export const KEY_PREFIX = 'crmx_live_';
export const LOOKUP_ID_LENGTH = 12;
export const SECRET_LENGTH = 32;

export const KEY_STATUSES = ['active', 'grace', 'expired', 'revoked'] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export const GRACE_PERIODS = ['1h', '24h', '7d'] as const;
export type GracePeriod = (typeof GRACE_PERIODS)[number];
export const DEFAULT_GRACE: GracePeriod = '24h';
export const GRACE_MS: Record<GracePeriod, number> = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 };

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

/** The status a key has at `now`: a grace period that has ended reads `expired`. */
export function effectiveKeyStatus(state: ApiKeyState, now: number): KeyStatus {
  if (state.status === 'grace' && state.graceEndsAt !== null && now >= Date.parse(state.graceEndsAt)) return 'expired';
  return state.status;
}

export function digestKey(pepper: Buffer, key: string): string {
  return createHmac('sha256', pepper).update(key, 'utf8').digest('hex');
}

/** A key drawn before its transaction: the whole key (shown once) and what is stored of it. */
export interface DrawnKey {
  key: string;
  /** The lookup id, the `api_key` entity's id. */
  keyId: string;
  digest: string;
  last4: string;
}

/** Draws a new key from the system CSPRNG; nothing is stored until a command writes it. */
export function drawKey(pepper: Buffer): DrawnKey {
  const keyId = base62(LOOKUP_ID_LENGTH);
  const key = `${KEY_PREFIX}${keyId}${base62(SECRET_LENGTH)}`;
  return { key, keyId, digest: digestKey(pepper, key), last4: key.slice(-4) };
}
