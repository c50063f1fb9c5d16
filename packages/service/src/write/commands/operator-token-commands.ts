import { iso } from '../../clock.js';
import { AdminError } from '../../errors/admin-error.js';
import type { WriteTx } from '../../store/store.js';
import {
  OPERATOR_SCOPES,
  type OperatorScope,
  type OperatorTokenState,
  type OperatorTokenSummary,
  summarizeToken,
  TOKEN_NAME,
} from './operator-token-state.js';

// The commands on operator tokens (entries of write/commands/commands.ts). The token is drawn by the caller;
// only its digest arrives here. Names are unique among active tokens; a revoked token keeps its row.

export interface CreateOperatorToken {
  id: string;
  name: string;
  scopes: OperatorScope[];
  digest: string;
  last4: string;
  now: number;
}

export async function createOperatorToken(tx: WriteTx, input: CreateOperatorToken): Promise<OperatorTokenSummary> {
  if (!TOKEN_NAME.test(input.name)) {
    throw new AdminError('invalid_argument', 'a token name is 1 to 64 of [a-z0-9._-], starting with a letter or digit');
  }
  const scopes = OPERATOR_SCOPES.filter((scope) => input.scopes.includes(scope));
  if (scopes.length === 0 || scopes.length !== new Set(input.scopes).size) {
    throw new AdminError('invalid_argument', `scopes: one or more of ${OPERATOR_SCOPES.join(', ')}`);
  }
  const taken = (await tx.findEntities<OperatorTokenState>('operator_token', {})).some(
    (token) => token.state.name === input.name && token.state.status === 'active',
  );
  if (taken) throw new AdminError('invalid_argument', `an active token is already named ${input.name}`);
  const state: OperatorTokenState = {
    name: input.name,
    scopes,
    digest: input.digest,
    last4: input.last4,
    status: 'active',
    createdAt: iso(input.now),
    revokedAt: null,
    lastUsedAt: null,
    lastUsedFrom: null,
  };
  await tx.putEntity<OperatorTokenState>({ kind: 'operator_token', id: input.id, team: null, parent: null, state });
  return summarizeToken(input.id, state);
}

/** Revokes the active token named `name`; a name with no active token is `not_found`. */
export async function revokeOperatorToken(
  tx: WriteTx,
  input: { name: string; now: number },
): Promise<OperatorTokenSummary> {
  const token = (await tx.findEntities<OperatorTokenState>('operator_token', {})).find(
    (t) => t.state.name === input.name && t.state.status === 'active',
  );
  if (!token) throw new AdminError('not_found', `no active token named ${input.name}`);
  const state: OperatorTokenState = { ...token.state, status: 'revoked', revokedAt: iso(input.now) };
  await tx.putEntity({ ...token, state });
  return summarizeToken(token.id, state);
}

/** Records a use of token `id` (time and address) unless a later one is already recorded. */
export async function touchOperatorToken(tx: WriteTx, input: { id: string; at: number; from: string }): Promise<void> {
  const token = await tx.getEntity<OperatorTokenState>('operator_token', input.id);
  if (!token) return;
  if (token.state.lastUsedAt !== null && Date.parse(token.state.lastUsedAt) >= input.at) return;
  await tx.putEntity({ ...token, state: { ...token.state, lastUsedAt: iso(input.at), lastUsedFrom: input.from } });
}
