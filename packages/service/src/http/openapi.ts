import type { SwaggerOptions } from '@fastify/swagger';
import type { TSchema } from 'typebox';
import { RELEASE } from '../config.js';
import { FeedPage, ListOf, Problem } from '../schemas/envelope.js';
import { ServiceTeamHeader } from '../schemas/params.js';
import {
  Activity,
  Board,
  Booking,
  BookingService,
  Call,
  Conversation,
  Health,
  Integration,
  Lead,
  LeadAttribution,
  LeadDetail,
  LeadResponse,
  Member,
  Stage,
  Team,
} from '../schemas/records.js';

// The OpenAPI 3.1 document comes from the route schemas; these are the parts no route carries.

export const OPENAPI_OPTIONS: SwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'crm-export API',
      version: '1.0a',
      description:
        'Read-only CRM export API. Generated from the route schemas by packages/service/scripts/generate-openapi.ts; do not edit.',
    },
    servers: [{ url: 'http://127.0.0.1:3000', description: 'local `crm-export serve`' }],
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'crmx_live_... secret key' } },
    },
    'x-generated': 'packages/service/scripts/generate-openapi.ts',
    'x-release': RELEASE,
  } as SwaggerOptions extends { openapi?: infer O } ? O : never,
  // Named schemas ($id) become named components instead of def-N.
  refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) || `def-${i}` },
};

const problemContent = { 'application/problem+json': { schema: { $ref: 'Problem#' } } };

/**
 * The item budget headers of a successful sync-class answer (docs/limits.md, "Budget headers"): extension
 * headers in the structured-field syntax of the IETF RateLimit header fields draft.
 */
const BUDGET_HEADERS = {
  'RateLimit-Policy': {
    type: 'string',
    description:
      'The key\'s item budgets: `"items-minute";q=<items>;w=<seconds>`, and on endpoints that count toward the daily quota `"items-day";q=<items>;w=86400` (structured-field list, IETF RateLimit header fields draft). Extension header: sent on successful list, feed, activity and search answers.',
  },
  RateLimit: {
    type: 'string',
    description:
      'What each budget of `RateLimit-Policy` has left once this answer\'s own items are counted: `"items-minute";r=<items>;t=<seconds>` (and `"items-day"`); `t` is whole seconds, rounded up, until the window ends (the day: 00:00 UTC). Extension header, advisory: the 429 answers stay authoritative.',
  },
} as const;

/**
 * The responses of a route: 200 with `ok`, and a problem body for every error status. `budget`: the route
 * is sync-class, so its 200 carries the item budget headers.
 */
export function responses(ok: TSchema, budget = false) {
  // A named record is referenced, not repeated: the document stays small and clients get its name.
  const id = schemaId(ok);
  const body = id !== undefined && NAMED_IDS.has(id) ? { $ref: `${id}#` } : ok;
  return {
    200: budget ? { ...body, headers: BUDGET_HEADERS } : body,
    '4XX': { description: 'An error (problem+json)', content: problemContent },
    '5XX': { description: 'An error (problem+json)', content: problemContent },
  };
}

/** Route-schema parts for an endpoint that needs a key, optionally with the Service-Team header. */
export function secured(withTeam: boolean) {
  return { security: [{ bearerAuth: [] }], ...(withTeam ? { headers: ServiceTeamHeader } : {}) };
}

/** Schemas published as named components (`#/components/schemas/<$id>`), for generated clients. */
export const NAMED_SCHEMAS: readonly TSchema[] = [
  Integration,
  Team,
  Member,
  Stage,
  Board,
  BookingService,
  Lead,
  LeadAttribution,
  LeadResponse,
  LeadDetail,
  Activity,
  Call,
  Conversation,
  Booking,
  Health,
  FeedPage,
  Problem,
];

function schemaId(schema: TSchema): string | undefined {
  const id = (schema as { $id?: unknown }).$id;
  return typeof id === 'string' ? id : undefined;
}

const NAMED_IDS = new Set(NAMED_SCHEMAS.map(schemaId));

/** A list envelope whose items reference the named record schema `item`. */
export function listOf(item: TSchema, listId: string): TSchema {
  const envelope = ListOf(item, listId);
  const data = { ...envelope.properties.data, items: { $ref: `${schemaId(item)}#` } };
  return { ...envelope, properties: { ...envelope.properties, data } } as unknown as TSchema;
}
