import { iso } from '../../clock.js';
import type { WriteTx } from '../../store/store.js';

// The console's sign-in sessions (entities of kind `console_session`, entries of write/commands/commands.ts).
// The id is a digest of the secret the browser holds in its cookie: a copy of the database opens no session.
// Every API process reads them, so a session works whichever `serve --workers` process answers.

export interface ConsoleSessionState {
  /** The operator token signed in with (its lookup id and name); its scopes are read from it on each request. */
  tokenId: string;
  tokenName: string;
  /** The synchronizer token every change posted from the console must carry. */
  csrf: string;
  createdAt: string;
  lastSeenAt: string;
  /** When the session ends whatever its use. */
  expiresAt: string;
}

export interface OpenConsoleSession {
  /** Digest of the cookie's secret. */
  id: string;
  tokenId: string;
  tokenName: string;
  csrf: string;
  now: number;
  /** Longest life of a session, milliseconds. */
  maxAgeMs: number;
  /** Sessions idle since before this (epoch ms) are deleted on the way. */
  idleBefore: number;
}

/** Opens a session, and deletes the ones that have expired (there are few; this keeps the table small). */
export async function openConsoleSession(tx: WriteTx, input: OpenConsoleSession): Promise<ConsoleSessionState> {
  for (const old of await tx.findEntities<ConsoleSessionState>('console_session', {})) {
    if (Date.parse(old.state.lastSeenAt) < input.idleBefore || Date.parse(old.state.expiresAt) <= input.now) {
      await tx.deleteEntity('console_session', old.id);
    }
  }
  const state: ConsoleSessionState = {
    tokenId: input.tokenId,
    tokenName: input.tokenName,
    csrf: input.csrf,
    createdAt: iso(input.now),
    lastSeenAt: iso(input.now),
    expiresAt: iso(input.now + input.maxAgeMs),
  };
  await tx.putEntity<ConsoleSessionState>({ kind: 'console_session', id: input.id, team: null, parent: null, state });
  return state;
}

/** Records a use of session `id` unless a later one is recorded (a session already closed stays closed). */
export async function touchConsoleSession(tx: WriteTx, input: { id: string; now: number }): Promise<void> {
  const session = await tx.getEntity<ConsoleSessionState>('console_session', input.id);
  if (!session || Date.parse(session.state.lastSeenAt) >= input.now) return;
  await tx.putEntity({ ...session, state: { ...session.state, lastSeenAt: iso(input.now) } });
}

/** Ends session `id` (sign out, or found expired); no-op when it is gone. */
export async function closeConsoleSession(tx: WriteTx, input: { id: string }): Promise<void> {
  await tx.deleteEntity('console_session', input.id);
}
