// The one list of endpoint names: what each endpoint declaration names (http/endpoints.ts; the type below
// makes the compiler refuse any other, and a test checks each is declared once), what `capability_disabled`
// switches off, and what `crm-export admin switches capability NAME` accepts.

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
