// Where the console is served, and the route options every console route carries.

/** Where the console is served on the internal listener. */
export const CONSOLE_PREFIX_PATH = '/console';

/** Every console route: the internal listener's token hook leaves it alone (`none`); the console's session signs it in. */
export const CONSOLE_ROUTE = { config: { operatorScope: 'none' as const } };
/** The pages anyone may reach, without a session: the start, sign-in, sign-out and the assets. */
export const PUBLIC_ROUTES: ReadonlySet<string> = new Set(
  ['/', '/sign-in', '/sign-out', '/assets/:name'].map((path) => `${CONSOLE_PREFIX_PATH}${path}`),
);
