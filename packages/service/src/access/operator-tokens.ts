import type { Clock } from '../clock.js';
import { AdminError } from '../errors/admin-error.js';
import { ApiError } from '../errors/catalogue.js';
import type { Store } from '../store/store.js';
import { runCommand } from '../write/commands/commands.js';
import {
  drawOperatorToken,
  OPERATOR_SCOPES,
  type OperatorScope,
  type OperatorTokenState,
  type OperatorTokenSummary,
  parseOperatorToken,
  summarizeToken,
} from '../write/commands/operator-token-state.js';
import { bearerToken, ConnectionKeys, getPepper, looksLikeSecretKey } from './keys.js';
import type { AuthLockout } from './limits/auth-lockout.js';
import { TtlCache } from './ttl-cache.js';

// Operator tokens: the credentials of the internal listener (intake, management API, console). Created,
// listed and revoked here (the changes are write commands, write/commands/operator-token-commands.ts), and
// checked on every request of the internal listener by `OperatorTokenAuth`: digest compared in constant time,
// failures counted toward a lockout of their own (the same limits as API keys), last use recorded at most
// once a minute per token and process.

/** Who a request of the internal listener is, once its token is verified. */
export interface OperatorPrincipal {
  /** The token's lookup id (never the secret). */
  tokenId: string;
  /** The token's name: the actor of the audit trail. */
  name: string;
  scopes: readonly OperatorScope[];
}

/** `intake,read` into scopes; an unknown or repeated scope is refused. */
export function parseScopes(text: string): OperatorScope[] {
  const scopes = text.split(',').map((scope) => scope.trim());
  for (const scope of scopes) {
    if (!OPERATOR_SCOPES.includes(scope as OperatorScope)) {
      throw new AdminError('invalid_argument', `scope must be one of ${OPERATOR_SCOPES.join(', ')} (got ${scope})`);
    }
  }
  if (new Set(scopes).size !== scopes.length) throw new AdminError('invalid_argument', 'a scope is named twice');
  return scopes as OperatorScope[];
}

/** Creates a token; the token text is returned once and never stored. */
export async function createOperatorToken(
  store: Store,
  clock: Clock,
  input: { name: string; scopes: readonly OperatorScope[] },
): Promise<{ token: string; summary: OperatorTokenSummary }> {
  const drawn = drawOperatorToken(await getPepper(store));
  const summary = await runCommand(store, 'operator_token.create', {
    id: drawn.id,
    name: input.name,
    scopes: [...input.scopes],
    digest: drawn.digest,
    last4: drawn.last4,
    now: clock.now(),
  });
  return { token: drawn.token, summary };
}

/** Every token, active and revoked, in creation order (never a digest). */
export async function listOperatorTokens(store: Store): Promise<OperatorTokenSummary[]> {
  const rows = await store.findEntities<OperatorTokenState>('operator_token', {});
  return rows.map((row) => summarizeToken(row.id, row.state));
}

/** Revokes the active token named `name`: refused within the key cache time (under 5 s) in every process. */
export function revokeOperatorToken(store: Store, clock: Clock, name: string): Promise<OperatorTokenSummary> {
  return runCommand(store, 'operator_token.revoke', { name, now: clock.now() });
}

export interface OperatorAuthRequest {
  authorization: string | undefined;
  ip: string;
  /** The request's connection (its socket): a token it presented before is not hashed again. */
  connection?: object | undefined;
}

export interface OperatorTokenAuthOptions {
  store: Store;
  clock: Clock;
  /** The lockout tokens' failures count toward (`StoreAccessControl.lockoutFor`). */
  lockout: AuthLockout;
  /** How long a token read from the store is trusted (the limits' `keyCacheMs`, under 5 s). */
  cacheMs: number;
  /** At most one last-use write per token in this time, per process (default one minute). */
  lastUseEveryMs?: number;
  /** A last-use write that failed (logged by the caller; the request it came from is not refused). */
  onLastUseError?: (error: unknown) => void;
}

export class OperatorTokenAuth {
  private readonly tokens;
  private readonly connectionKeys = new ConnectionKeys();
  private readonly touched = new Map<string, number>();
  private readonly writes = new Set<Promise<void>>();
  private readonly lastUseEveryMs: number;

  constructor(private readonly options: OperatorTokenAuthOptions) {
    this.tokens = new TtlCache<string, OperatorTokenState | undefined>(options.clock, options.cacheMs);
    this.lastUseEveryMs = options.lastUseEveryMs ?? 60_000;
  }

  /**
   * The token's principal, or the refusal: `429 rate_limited` while the address is locked out or a wrong
   * secret names a locked token, `401 api_key_not_token` for an API key, `401 invalid_token` otherwise.
   */
  async authenticate(request: OperatorAuthRequest): Promise<OperatorPrincipal> {
    const { lockout, store } = this.options;
    const { ip } = request;
    if (await lockout.ipLocked(ip)) throw new ApiError('rate_limited', { retryAfter: lockout.retryAfter });
    const token = bearerToken(request.authorization);
    // An API key is a credential of another kind, not a guess at a token: refused by name, not counted.
    if (token !== undefined && looksLikeSecretKey(token)) throw new ApiError('api_key_not_token');
    const id = token === undefined ? null : parseOperatorToken(token);
    if (token === undefined || id === null) return this.refuse(ip);
    const state = await this.tokens.get(
      id,
      async () => (await store.getEntity<OperatorTokenState>('operator_token', id))?.state,
    );
    if (!state) return this.refuse(ip);
    const pepper = await getPepper(store);
    if (!this.connectionKeys.matches(request.connection, pepper, token, state.digest)) {
      if (await lockout.keyLocked(`op:${id}`)) {
        await lockout.recordFailure(ip);
        throw new ApiError('rate_limited', { retryAfter: lockout.retryAfter });
      }
      return this.refuse(ip, `op:${id}`);
    }
    // From here the token is genuine: a refusal is not a failed attempt.
    if (state.status !== 'active') throw new ApiError('invalid_token');
    this.recordUse(id, ip);
    return { tokenId: id, name: state.name, scopes: state.scopes };
  }

  /** Throws `403 insufficient_scope` unless the token holds `scope`. */
  requireScope(principal: OperatorPrincipal, scope: OperatorScope): void {
    if (!principal.scopes.includes(scope)) throw new ApiError('insufficient_scope');
  }

  /** Waits for the last-use writes under way (on close, and in tests). */
  async settle(): Promise<void> {
    await Promise.all([...this.writes]);
  }

  private async refuse(ip: string, tokenKey?: string): Promise<never> {
    await this.options.lockout.recordFailure(ip, { keyId: tokenKey });
    throw new ApiError('invalid_token');
  }

  /** One write per token per `lastUseEveryMs` in this process: never a write per request. */
  private recordUse(id: string, ip: string): void {
    const now = this.options.clock.now();
    const last = this.touched.get(id);
    if (last !== undefined && now - last < this.lastUseEveryMs) return;
    this.touched.set(id, now);
    const write = runCommand(this.options.store, 'operator_token.touch', { id, at: now, from: ip }).catch(
      (error: unknown) => {
        // Tried again with the next request.
        this.touched.delete(id);
        this.options.onLastUseError?.(error);
      },
    );
    this.writes.add(write);
    void write.finally(() => this.writes.delete(write));
  }
}
