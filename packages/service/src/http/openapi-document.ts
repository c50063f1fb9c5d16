import type { AccessControl } from '../access/access-control.js';
import { systemClock } from '../clock.js';
import { DEFAULT_LIMITS } from '../limits.js';
import { openStore } from '../store/open-store.js';
import { buildApp } from './app.js';

/** Access control for an app that only describes itself: serving a request with it is a bug. */
const NOT_SERVING: AccessControl = new Proxy({} as AccessControl, {
  get: () => () => {
    throw new Error('the OpenAPI app does not serve requests');
  },
});

/** The OpenAPI 3.1 document of the API, from the route schemas (what openapi.json holds). */
export async function openapiDocument(): Promise<Record<string, unknown>> {
  const store = await openStore('sqlite::memory:');
  const app = buildApp({ store, access: NOT_SERVING, clock: systemClock, limits: DEFAULT_LIMITS, logger: false });
  try {
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
    await store.close();
  }
}

/** The committed file's exact text: two-space indentation and a final newline. */
export function openapiText(document: Record<string, unknown>): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
