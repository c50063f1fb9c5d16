// The one list of endpoint names: what routes declare in their `endpoint` config (the type below makes
// the compiler refuse any other), what `capability_disabled` switches off, and what
// `crm-export admin switches capability NAME` accepts.

export const ENDPOINT_NAMES = [
  'health',
  'me',
  'teams.list',
  'teams.get',
  'members.list',
  'booking_services.list',
  'leads.list',
  'leads.get',
  'leads.activities',
  'leads.search',
  'boards.list',
  'calls.list',
  'calls.get',
  'conversations.list',
  'conversations.get',
  'bookings.list',
  'bookings.get',
  'sync.changes',
] as const;

export type EndpointName = (typeof ENDPOINT_NAMES)[number];

export function isEndpointName(value: string): value is EndpointName {
  return (ENDPOINT_NAMES as readonly string[]).includes(value);
}
