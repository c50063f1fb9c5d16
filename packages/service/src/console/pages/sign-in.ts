import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { mayRun, type PageContext, sendPage } from '../page.js';
import { CONSOLE_PREFIX_PATH, CONSOLE_ROUTE } from '../paths.js';
import { sessionOf } from '../sessions.js';

// Sign-in and sign-out. The token typed in is checked as the internal listener checks a Bearer token
// (failures counted toward its lockout); it opens a session and is never stored or sent back.

export interface CookieWriters {
  signedIn(reply: FastifyReply, secret: string, secure: boolean): void;
  signedOut(reply: FastifyReply, secure: boolean): void;
}

/** The status of each refusal of a token, as the management API answers it. */
const REFUSAL_STATUS: Partial<Record<string, number>> = {
  invalid_token: 401,
  api_key_not_token: 401,
  rate_limited: 429,
};

const secure = (request: FastifyRequest) => request.protocol === 'https';

export function registerSignIn(
  app: FastifyInstance,
  context: (request: FastifyRequest) => PageContext,
  cookies: CookieWriters,
): void {
  app.get('/sign-in', CONSOLE_ROUTE, (request, reply) => {
    if (sessionOf(request)) return reply.redirect(`${CONSOLE_PREFIX_PATH}/integrations`, 303);
    return sendPage(reply, request, 'sign-in', { title: 'Sign in' });
  });

  app.post<{ Body: { token?: unknown } }>('/sign-in', CONSOLE_ROUTE, async (request, reply) => {
    const page = context(request);
    const token = typeof request.body?.token === 'string' ? request.body.token.trim() : '';
    const refuse = (status: number, error: string) =>
      sendPage(reply.code(status), request, 'sign-in', { title: 'Sign in', error });
    if (!token) return refuse(400, 'Paste a token.');
    const checked = await page.deps.checkToken(token, request.ip);
    if (!checked.ok) return refuse(REFUSAL_STATUS[checked.code] ?? 403, checked.message);
    if (!mayRun(checked.operator, 'read')) {
      return refuse(403, `The token ${checked.operator.name} lacks the read scope the console needs.`);
    }
    const stale = sessionOf(request);
    if (stale) await page.sessions.close(stale.id);
    const { secret } = await page.sessions.open(checked.operator);
    cookies.signedIn(reply, secret, secure(request));
    return reply.redirect(`${CONSOLE_PREFIX_PATH}/integrations`, 303);
  });

  app.post('/sign-out', CONSOLE_ROUTE, async (request, reply) => {
    const session = sessionOf(request);
    if (session) await context(request).sessions.close(session.id);
    cookies.signedOut(reply, secure(request));
    return reply.redirect(`${CONSOLE_PREFIX_PATH}/sign-in`, 303);
  });
}
