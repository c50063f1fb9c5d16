import { base62 } from '../../ids.js';
import { digestKey } from './key-state.js';

// The state of an `operator_token` entity: a named, scoped credential of the internal listener (intake,
// management API, console). Its text is `cxo_` + a 12-character lookup id + a 32-character secret, both
// base62; only the digest is stored, with the same HMAC and pepper as API keys (key-state.ts).

export const OPERATOR_TOKEN_PREFIX = 'cxo_';
export const TOKEN_LOOKUP_LENGTH = 12;
export const TOKEN_SECRET_LENGTH = 32;

/** What a token may do: post intake batches, read the management API, manage keys, operate the service. */
export const OPERATOR_SCOPES = ['intake', 'read', 'keys', 'operate'] as const;
export type OperatorScope = (typeof OPERATOR_SCOPES)[number];

/** A token's name: lower-case letters, digits, `.`, `_`, `-`, starting with a letter or digit. */
export const TOKEN_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

export interface OperatorTokenState {
  name: string;
  scopes: OperatorScope[];
  /** Hex HMAC-SHA-256 of the whole token under the server pepper. */
  digest: string;
  last4: string;
  status: 'active' | 'revoked';
  createdAt: string;
  revokedAt: string | null;
  /** Last accepted use, recorded at most once a minute per process (coarse on purpose). */
  lastUsedAt: string | null;
  lastUsedFrom: string | null;
}

/** A token drawn before its transaction: the whole token (shown once) and what is stored of it. */
export interface DrawnToken {
  token: string;
  /** The lookup id, the entity's id. */
  id: string;
  digest: string;
  last4: string;
}

/** Draws a new token from the system CSPRNG; nothing is stored until a command writes it. */
export function drawOperatorToken(pepper: Buffer): DrawnToken {
  const id = base62(TOKEN_LOOKUP_LENGTH);
  const token = `${OPERATOR_TOKEN_PREFIX}${id}${base62(TOKEN_SECRET_LENGTH)}`;
  return { token, id, digest: digestKey(pepper, token), last4: token.slice(-4) };
}

const TOKEN_PATTERN = new RegExp(
  `^${OPERATOR_TOKEN_PREFIX}([0-9A-Za-z]{${TOKEN_LOOKUP_LENGTH}})[0-9A-Za-z]{${TOKEN_SECRET_LENGTH}}$`,
);

/** The lookup id of a well-formed operator token, or null. */
export function parseOperatorToken(token: string): string | null {
  return TOKEN_PATTERN.exec(token)?.[1] ?? null;
}

/** What `admin tokens list` and the management API show of a token: never its digest. */
export interface OperatorTokenSummary {
  id: string;
  name: string;
  scopes: OperatorScope[];
  status: 'active' | 'revoked';
  last4: string;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
  lastUsedFrom: string | null;
}

export function summarizeToken(id: string, state: OperatorTokenState): OperatorTokenSummary {
  const { digest: _digest, ...shown } = state;
  return { id, ...shown };
}
