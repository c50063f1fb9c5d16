import formbody from '@fastify/formbody';
import helmet from '@fastify/helmet';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AdminError } from '../errors/admin-error.js';
import type { ConsoleDeps } from './console-deps.js';
import { readCookie, setCookie } from './cookie.js';
import { ConsoleRefusal, type PageContext, sendPage } from './page.js';
import { registerIntegrationPages } from './pages/integration-pages.js';
import { registerLogPages } from './pages/log-pages.js';
import { registerSignIn } from './pages/sign-in.js';
import { CONSOLE_PREFIX_PATH as CONSOLE_PREFIX, CONSOLE_ROUTE, PUBLIC_ROUTES } from './paths.js';
import { attachSession, ConsoleSessions, csrfMatches, SESSION_COOKIE, SESSION_MAX_MS, sessionOf } from './sessions.js';
import { asset } from './views.js';

// The console: server-rendered pages under /console on the internal listener, over the actions of manage/
// (docs/management.md#the-console). Sign-in turns an operator token into a session cookie; every change is
// a form post that carries the session's CSRF token from a page of this origin; every page is under a
// content security policy that runs only the scripts and styles this package serves.

/** Form bodies are small: a name, team ids, an allowlist. */
const FORM_BODY_LIMIT = 64 * 1024;

/**
 * Adds the console's routes to `app`, a Fastify context mounted at /console (route paths are relative to
 * it). Its hooks, parsers and error pages stay inside that context.
 */
export async function registerConsole(app: FastifyInstance, deps: ConsoleDeps): Promise<void> {
  const sessions = new ConsoleSessions(deps.store, deps.clock);
  await app.register(formbody, { bodyLimit: FORM_BODY_LIMIT });
  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
    },
    // The listener may be plain HTTP on loopback: HSTS belongs to the TLS proxy in front, if any.
    strictTransportSecurity: false,
    // Not `no-referrer`: with it a browser sends `Origin: null` on a form post, and the origin check needs it.
    referrerPolicy: { policy: 'same-origin' },
    crossOriginEmbedderPolicy: false,
  });

  const context = (request: FastifyRequest): PageContext => ({ deps, request, sessions });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const session = await sessions.read(readCookie(request.headers.cookie, SESSION_COOKIE));
    if (session) {
      attachSession(request, session);
      // The internal listener's field for who a request is: here the session's token.
      request.operator = { tokenId: session.operator.id, name: session.operator.name, scopes: session.operator.scopes };
    }
  });
  app.addHook('preHandler', async (request) => {
    const session = sessionOf(request);
    if (!PUBLIC_ROUTES.has(request.routeOptions.url ?? '') && !session) {
      if (request.method === 'GET') throw new ConsoleRefusal(303, 'sign_in', `${CONSOLE_PREFIX}/sign-in`);
      throw new ConsoleRefusal(401, 'session_required', 'Your session has ended. Sign in again.');
    }
    if (request.method !== 'POST') return;
    if (!sameOrigin(request)) {
      throw new ConsoleRefusal(403, 'cross_origin', 'This form was not posted from a page of the console.');
    }
    // Sign-in opens a new session (a stale one is replaced); everything else a session posts carries its token.
    if (session && request.routeOptions.url !== `${CONSOLE_PREFIX}/sign-in`) {
      const given = (request.body as Record<string, unknown> | undefined)?._csrf;
      if (!csrfMatches(session, given)) {
        throw new ConsoleRefusal(403, 'csrf_mismatch', 'This form has expired. Reload the page and try again.');
      }
    }
  });
  app.setErrorHandler((error, request, reply) => sendError(error, request, reply));
  app.setNotFoundHandler((request, reply) =>
    sendError(new ConsoleRefusal(404, 'not_found', 'There is no such page.'), request, reply),
  );

  app.get('/', CONSOLE_ROUTE, (request, reply) =>
    reply.redirect(sessionOf(request) ? `${CONSOLE_PREFIX}/integrations` : `${CONSOLE_PREFIX}/sign-in`, 303),
  );
  app.get<{ Params: { name: string } }>('/assets/:name', CONSOLE_ROUTE, (request, reply) => {
    const found = asset(request.params.name);
    if (!found) throw new ConsoleRefusal(404, 'not_found', 'There is no such file.');
    return reply.header('cache-control', 'no-cache').type(found.type).send(found.body);
  });
  registerSignIn(app, context, {
    signedIn: (reply, secret, secure) =>
      reply.header(
        'set-cookie',
        setCookie(SESSION_COOKIE, secret, { path: CONSOLE_PREFIX, maxAge: SESSION_MAX_MS / 1000, secure }),
      ),
    signedOut: (reply, secure) =>
      reply.header('set-cookie', setCookie(SESSION_COOKIE, '', { path: CONSOLE_PREFIX, maxAge: 0, secure })),
  });
  registerIntegrationPages(app, context);
  registerLogPages(app, context);
}

/**
 * A browser names where a form was posted from (`Sec-Fetch-Site`, `Origin`): it must be this origin. A
 * client that sends neither is no browser another site could drive; the session's CSRF token still applies.
 */
function sameOrigin(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  return origin === `${request.protocol}://${request.host}`;
}

const ADMIN_STATUS: Partial<Record<string, number>> = { not_found: 404, invalid_argument: 400 };

function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof ConsoleRefusal && error.status === 303) return reply.redirect(error.message, 303);
  let status = 500;
  let code = 'internal_error';
  let message = 'Something went wrong on the server. The log has the details.';
  if (error instanceof ConsoleRefusal) {
    ({ status, code, message } = error);
  } else if (error instanceof AdminError) {
    status = ADMIN_STATUS[error.code] ?? 409;
    code = error.code;
    message = error.message;
  } else if (isClientError(error)) {
    status = error.statusCode;
    code = 'bad_request';
    message = status === 413 ? 'The form is too large.' : 'The request could not be read.';
  } else {
    request.log.error({ err: error }, 'console page failed');
  }
  return sendPage(reply.code(status), request, 'error', {
    title: 'Error',
    heading: status === 403 ? 'Not allowed' : status === 404 ? 'Not found' : 'Refused',
    message,
    code,
  });
}

function isClientError(error: unknown): error is { statusCode: number } {
  const status = (error as { statusCode?: unknown })?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 500;
}
