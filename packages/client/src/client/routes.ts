// Every endpoint of the spec as data (stripe-node style): the client's methods are built from this table.

/** How the response is shaped: one object, a list envelope (paged or not), or a feed page. */
export const ROUTE_KINDS = ['single', 'list', 'paged', 'feed'] as const;
export type RouteKind = (typeof ROUTE_KINDS)[number];

/** How the team is named: not at all, or by the `Service-Team` header. */
export const TEAM_BINDINGS = ['none', 'header'] as const;
export type TeamBinding = (typeof TEAM_BINDINGS)[number];

export interface Route {
  /** HTTP method; only lead search is a POST. */
  readonly method: 'GET' | 'POST';
  /** Path relative to the base URL (which includes `/v1`); `{id}` is filled from the call. */
  readonly path: string;
  /** Response shape. */
  readonly kind: RouteKind;
  /** Whether the endpoint reads one team's data named by `Service-Team`. */
  readonly team: TeamBinding;
  /** False only for `/health`, which takes no key. */
  readonly auth: boolean;
}

export const ROUTES = {
  me: { method: 'GET', path: '/me', kind: 'single', team: 'none', auth: true },
  teams: { method: 'GET', path: '/teams', kind: 'list', team: 'none', auth: true },
  team: { method: 'GET', path: '/teams/{id}', kind: 'single', team: 'none', auth: true },
  members: { method: 'GET', path: '/members', kind: 'list', team: 'header', auth: true },
  boards: { method: 'GET', path: '/boards', kind: 'paged', team: 'header', auth: true },
  bookingServices: { method: 'GET', path: '/booking_services', kind: 'list', team: 'header', auth: true },
  leads: { method: 'GET', path: '/leads', kind: 'paged', team: 'header', auth: true },
  lead: { method: 'GET', path: '/leads/{id}', kind: 'single', team: 'none', auth: true },
  searchLeads: { method: 'POST', path: '/leads/search', kind: 'paged', team: 'header', auth: true },
  leadActivities: { method: 'GET', path: '/leads/{id}/activities', kind: 'paged', team: 'none', auth: true },
  calls: { method: 'GET', path: '/calls', kind: 'paged', team: 'header', auth: true },
  call: { method: 'GET', path: '/calls/{id}', kind: 'single', team: 'none', auth: true },
  conversations: { method: 'GET', path: '/conversations', kind: 'paged', team: 'header', auth: true },
  conversation: { method: 'GET', path: '/conversations/{id}', kind: 'single', team: 'none', auth: true },
  bookings: { method: 'GET', path: '/bookings', kind: 'paged', team: 'header', auth: true },
  booking: { method: 'GET', path: '/bookings/{id}', kind: 'single', team: 'none', auth: true },
  changes: { method: 'GET', path: '/sync/changes', kind: 'feed', team: 'header', auth: true },
  health: { method: 'GET', path: '/health', kind: 'single', team: 'none', auth: false },
} as const satisfies Record<string, Route>;

export type RouteName = keyof typeof ROUTES;
export const ROUTE_NAMES = Object.keys(ROUTES) as RouteName[];
