import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Store } from '../store/store.js';
import { runCommand } from '../write/commands/commands.js';
import type { ConsoleSessionState } from '../write/commands/console-session-commands.js';
import type { OperatorTokenState } from '../write/commands/operator-token-state.js';
import type { ConsoleOperator } from './console-deps.js';

// Sign-in sessions. The browser holds a random secret in an HttpOnly cookie; the database holds its digest,
// the operator token's id and name, and the session's CSRF token. The token's text is never stored or sent
// back. Every API process reads the same rows, so a session works across `serve --workers`. A session ends
// after 8 hours unused, 24 hours after sign-in, at sign-out, or when its token is revoked.

export const SESSION_COOKIE = 'crmx_console';
export const SESSION_IDLE_MS = 8 * 60 * 60 * 1000;
export const SESSION_MAX_MS = 24 * 60 * 60 * 1000;
/** A use is recorded at most once a minute per session: pages are read far more often than that matters. */
const TOUCH_EVERY_MS = 60 * 1000;
const SECRET = /^[A-Za-z0-9_-]{43}$/;

/** A live session. */
export interface ConsoleSession {
  /** The digest of the cookie's secret (the row's id). */
  id: string;
  operator: ConsoleOperator;
  /** The synchronizer token every form of this session carries. */
  csrf: string;
}

/** The live session of each request that has one (set by the console's first hook). */
const SESSIONS = new WeakMap<object, ConsoleSession>();

/** The live session of `request`, if it has one. */
export const sessionOf = (request: object): ConsoleSession | undefined => SESSIONS.get(request);

/** Notes `session` as the session of `request`. */
export const attachSession = (request: object, session: ConsoleSession): void => {
  SESSIONS.set(request, session);
};

const digest = (secret: string) => createHash('sha256').update(secret).digest('hex');

export class ConsoleSessions {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** Opens a session for `operator`: the secret goes into the cookie, never into storage. */
  async open(operator: ConsoleOperator): Promise<{ secret: string; session: ConsoleSession }> {
    const secret = randomBytes(32).toString('base64url');
    const csrf = randomBytes(32).toString('base64url');
    const now = this.clock.now();
    const id = digest(secret);
    await runCommand(this.store, 'console_session.open', {
      id,
      tokenId: operator.id,
      tokenName: operator.name,
      csrf,
      now,
      maxAgeMs: SESSION_MAX_MS,
      idleBefore: now - SESSION_IDLE_MS,
    });
    return { secret, session: { id, operator, csrf } };
  }

  /** The live session of a cookie's secret; an expired one, or one whose token was revoked, is closed. */
  async read(secret: string | undefined): Promise<ConsoleSession | undefined> {
    if (!secret || !SECRET.test(secret)) return undefined;
    const id = digest(secret);
    const row = await this.store.getEntity<ConsoleSessionState>('console_session', id);
    if (!row) return undefined;
    const now = this.clock.now();
    const { state } = row;
    const lastSeen = Date.parse(state.lastSeenAt);
    const token = await this.store.getEntity<OperatorTokenState>('operator_token', state.tokenId);
    if (now - lastSeen >= SESSION_IDLE_MS || now >= Date.parse(state.expiresAt) || token?.state.status !== 'active') {
      await this.close(id);
      return undefined;
    }
    if (now - lastSeen >= TOUCH_EVERY_MS) await runCommand(this.store, 'console_session.touch', { id, now });
    return { id, operator: { id: token.id, name: token.state.name, scopes: token.state.scopes }, csrf: state.csrf };
  }

  close(id: string): Promise<void> {
    return runCommand(this.store, 'console_session.close', { id });
  }
}

/** True when `given` is the session's CSRF token (compared in constant time). */
export function csrfMatches(session: ConsoleSession, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(session.csrf);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
