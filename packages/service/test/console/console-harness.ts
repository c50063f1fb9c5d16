import type { LightMyRequestResponse } from 'fastify';
import { consoleSurface } from '../../src/console/console-surface.js';
import { SESSION_COOKIE } from '../../src/console/sessions.js';
import type { Store } from '../../src/store/store.js';
import { seedOrganization, seedTeam } from '../access/fixtures.js';
import { type InternalHarness, internalHarness } from '../internal/internal-harness.js';

// The console on the internal app over a store, driven by injected requests as a browser would send them:
// the session cookie kept between requests, forms posted urlencoded with the page's CSRF token.

export const ORG = 'org_acme';
export const TEAM_A = 'team_a';
export const TEAM_B = 'team_b';

export interface Browser {
  /** The session cookie's value, once signed in. */
  cookie: string | undefined;
  get(url: string): Promise<LightMyRequestResponse>;
  /** Posts a form; `_csrf` is added from the last page read unless the fields name one. */
  post(url: string, fields: Record<string, string>, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  signIn(token: string): Promise<LightMyRequestResponse>;
  /** The CSRF token of the last page read. */
  csrf: string | undefined;
}

export async function consoleHarness(store: Store, orgName = 'Acme'): Promise<InternalHarness> {
  await seedOrganization(store, ORG, { name: orgName });
  await seedTeam(store, TEAM_A, { organization: ORG, name: 'Team A' });
  await seedTeam(store, TEAM_B, { organization: ORG, name: 'Team B' });
  return internalHarness(store, [consoleSurface]);
}

export function browser(h: InternalHarness, ip = '127.0.0.1'): Browser {
  const state: Browser = {
    cookie: undefined,
    csrf: undefined,
    get: async (url) => {
      const response = await h.app.inject({ method: 'GET', url, remoteAddress: ip, headers: cookieHeader() });
      remember(response);
      return response;
    },
    post: async (url, fields, headers = {}) => {
      const form = new URLSearchParams({ ...(state.csrf ? { _csrf: state.csrf } : {}), ...fields });
      const response = await h.app.inject({
        method: 'POST',
        url,
        remoteAddress: ip,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          origin: 'http://localhost:80',
          'sec-fetch-site': 'same-origin',
          host: 'localhost:80',
          ...cookieHeader(),
          ...headers,
        },
        payload: form.toString(),
      });
      remember(response);
      return response;
    },
    signIn: (token) => state.post('/console/sign-in', { token }),
  };
  const cookieHeader = (): Record<string, string> =>
    state.cookie ? { cookie: `${SESSION_COOKIE}=${state.cookie}` } : {};
  const remember = (response: LightMyRequestResponse) => {
    const set = response.headers['set-cookie'];
    const line = Array.isArray(set) ? set[0] : set;
    if (line?.startsWith(`${SESSION_COOKIE}=`)) {
      const value = line.slice(SESSION_COOKIE.length + 1).split(';')[0];
      state.cookie = value || undefined;
    }
    const csrf = /name="_csrf" value="([^"]+)"/.exec(response.body)?.[1];
    if (csrf) state.csrf = csrf;
  };
  return state;
}
