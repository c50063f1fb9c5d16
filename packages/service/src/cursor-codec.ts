import { createHmac, timingSafeEqual } from 'node:crypto';
import { ApiError } from './errors/catalogue.js';
import type { Store } from './store/store.js';
import { drawSecret, runCommand } from './write/commands/commands.js';
import { CURSOR_SECRET_META_KEY } from './write/commands/meta-state.js';

// Opaque, tamper-proof cursors: base64url of `payload || HMAC-SHA-256(secret, scope || payload)`.
// The scope (endpoint, team, filters) is in the MAC but not in the cursor, so a cursor stays short
// and one issued for another endpoint, filter or team simply fails verification.

const MAC_BYTES = 32;

/** What a cursor is bound to: it only verifies for the same endpoint, team and filters. */
export interface CursorScope {
  endpoint: string;
  team: string;
  /** The filters in a canonical form ('' when none). */
  filter: string;
}

function scopeKey(scope: CursorScope): string {
  return `${scope.endpoint}\u0000${scope.team}\u0000${scope.filter}\u0000`;
}

export class CursorCodec {
  private secret: Buffer | undefined;

  /** Uses `secret` (at least 32 bytes) to sign and verify. */
  setSecret(secret: Buffer): void {
    if (secret.length < 32) throw new Error('cursor secret too short');
    this.secret = secret;
  }

  private mac(scope: CursorScope, payload: string): Buffer {
    if (!this.secret) throw new Error('cursor secret not loaded');
    return createHmac('sha256', this.secret).update(scopeKey(scope)).update(payload).digest();
  }

  /** A cursor carrying `payload` (short, printable) for `scope`. */
  encode(scope: CursorScope, payload: string): string {
    const body = Buffer.from(payload, 'utf8');
    return Buffer.concat([body, this.mac(scope, payload)]).toString('base64url');
  }

  /** The payload of `cursor`, or `400 invalid_request` (param `cursor`) when it was not issued for `scope`. */
  decode(scope: CursorScope, cursor: string): string {
    const raw = Buffer.from(cursor, 'base64url');
    if (raw.length <= MAC_BYTES || raw.toString('base64url') !== cursor)
      throw new ApiError('invalid_request', { param: 'cursor' });
    const payload = raw.subarray(0, raw.length - MAC_BYTES).toString('utf8');
    const expected = this.mac(scope, payload);
    if (!timingSafeEqual(expected, raw.subarray(raw.length - MAC_BYTES))) {
      throw new ApiError('invalid_request', { param: 'cursor' });
    }
    return payload;
  }
}

/** Reads the server's cursor secret, creating it once (inside a transaction, so processes agree). */
export async function loadCursorSecret(store: Store): Promise<Buffer> {
  const existing = await store.getMeta(CURSOR_SECRET_META_KEY);
  if (existing) return Buffer.from(existing, 'base64url');
  const value = await runCommand(store, 'secret.cursor', { fresh: drawSecret('base64url') });
  return Buffer.from(value, 'base64url');
}
