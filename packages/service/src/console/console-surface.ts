import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors/catalogue.js';
import type { InternalContext, InternalSurface } from '../http/internal-surface.js';
import { type ManageSurfaceContext, manageContextFor } from '../manage/context.js';
import type { ConsoleDeps } from './console-deps.js';
import { registerConsole } from './console-plugin.js';
import { CONSOLE_PREFIX_PATH } from './paths.js';

// The console as a surface of the internal listener: its token check is the listener's, and its actions run
// with the context the management API gives them.

/** What sign-in shows for each refusal of a token. */
const REFUSALS: Partial<Record<string, string>> = {
  invalid_token: 'This token is not valid, or it was revoked.',
  api_key_not_token: 'This is an API key. The console needs an operator token.',
  rate_limited: 'Too many failed attempts. Wait a minute and try again.',
};

export function consoleDeps(context: InternalContext): ConsoleDeps {
  return {
    store: context.store,
    clock: context.clock,
    checkToken: async (token, ip) => {
      try {
        const principal = await context.tokens.authenticate({ authorization: `Bearer ${token}`, ip });
        return { ok: true, operator: { id: principal.tokenId, name: principal.name, scopes: principal.scopes } };
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        return { ok: false, code: error.code, message: REFUSALS[error.code] ?? 'This token cannot sign in.' };
      }
    },
    // The management API's own context: the same lockout counters and last uses.
    manageContext: (actor) => manageContextFor(context as ManageSurfaceContext, actor),
  };
}

export const consoleSurface: InternalSurface = {
  prefix: CONSOLE_PREFIX_PATH,
  register: (app, context) => registerConsole(app as unknown as FastifyInstance, consoleDeps(context)),
};
