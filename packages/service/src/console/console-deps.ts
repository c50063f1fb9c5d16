import type { Clock } from '../clock.js';
import type { Actor, ManageContext } from '../manage/action.js';
import type { Store } from '../store/store.js';
import type { OperatorScope } from '../write/commands/operator-token-state.js';

// What the console needs from the listener that serves it (internal/). The console changes nothing itself:
// sign-in checks a token the way the listener does, and every page runs actions of manage/ with a context the
// listener builds, as the management API does.

/** The operator token a session was opened with, as it is now. */
export interface ConsoleOperator {
  /** The token's lookup id. */
  id: string;
  name: string;
  scopes: readonly OperatorScope[];
}

/** The answer to a token typed at sign-in. */
export type TokenCheck =
  | { ok: true; operator: ConsoleOperator }
  /** `code` is the error code the management API would answer (`invalid_credentials`, a lockout...). */
  | { ok: false; code: string; message: string };

export interface ConsoleDeps {
  store: Store;
  clock: Clock;
  /** Checks a token's text as the listener checks a Bearer token: failures counted, lockouts applied. */
  checkToken(token: string, address: string): Promise<TokenCheck>;
  /** The context an action runs with for `actor` (the same as the management API's). */
  manageContext(actor: Actor): ManageContext;
}
