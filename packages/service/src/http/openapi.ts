import type { SwaggerOptions } from '@fastify/swagger';
import type { TSchema } from 'typebox';
import { ApiError, ERROR_CODES, type ErrorCode } from '../errors/catalogue.js';
import { FeedPage, ListOf, Problem } from '../schemas/envelope.js';
import { EXAMPLE_ANSWERS } from '../schemas/generated/examples.js';
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
import { RELEASE } from '../service-names.js';
import type { Endpoint } from './endpoint.js';
import { byStatus, endpointErrors, errorsDescription } from './endpoint-errors.js';
import { ProblemBodies } from './problem.js';

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
      examples: problemExamples(),
    },
    'x-generated': 'packages/service/scripts/generate-openapi.ts',
    'x-release': RELEASE,
  } as SwaggerOptions extends { openapi?: infer O } ? O : never,
  // Named schemas ($id) become named components instead of def-N.
  refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) || `def-${i}` },
};

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

/** The headers an error answer of `status` carries besides `Service-Request-Id` (docs/errors.md). */
const ERROR_HEADERS: Partial<Record<number, Record<string, { type: string; description: string }>>> = {
  401: { 'WWW-Authenticate': { type: 'string', description: 'Bearer realm="crm-export"' } },
  429: { 'Retry-After': { type: 'string', description: 'Whole seconds to wait before trying again.' } },
  503: {
    'Retry-After': {
      type: 'string',
      description: 'Whole seconds to wait: set when the fault says how long it lasts (a database unavailable for now).',
    },
  },
};

/**
 * The responses of an endpoint: 200 with its body and an example answer (a demo's, schemas/generated), and
 * one problem answer per error status with the codes the endpoint can answer there (endpoint-errors.ts):
 * listed in the description and in `x-error-codes`, each with an example body. A sync-class 200 carries the
 * item budget headers.
 */
export function responses(endpoint: Endpoint) {
  const { response, charge } = endpoint;
  // A named record is referenced, not repeated: the document stays small and clients get its name.
  const id = schemaId(response);
  const schema = id !== undefined && NAMED_IDS.has(id) ? { $ref: `${id}#` } : response;
  const ok = {
    description: 'OK',
    ...(charge?.rateClass === 'sync' ? { headers: BUDGET_HEADERS } : {}),
    content: { 'application/json': { schema, example: EXAMPLE_ANSWERS[endpoint.name] } },
  };
  const errors = byStatus(endpointErrors(endpoint)).map(([status, codes]) => [
    status,
    {
      description: errorsDescription(codes),
      ...(ERROR_HEADERS[status] ? { headers: ERROR_HEADERS[status] } : {}),
      content: {
        'application/problem+json': {
          schema: { $ref: 'Problem#' },
          examples: Object.fromEntries(codes.map((code) => [code, { $ref: `#/components/examples/${code}` }])),
          'x-error-codes': codes,
        },
      },
    },
  ]);
  return { 200: ok, ...Object.fromEntries(errors) };
}

/** An example problem body of every code, as an app without a docs URL writes it. */
function problemExamples(): Record<string, { summary: string; value: unknown }> {
  const bodies = new ProblemBodies(undefined);
  const requestId = 'req_4f6c1a9e-2b7d-4c3e-9a51-8d2e6b0f7c14';
  const param: Partial<Record<ErrorCode, string>> = { invalid_request: 'limit' };
  return Object.fromEntries(
    ERROR_CODES.map((code) => {
      const error = new ApiError(code, { param: param[code] });
      return [code, { summary: code, value: JSON.parse(bodies.body(error, requestId)) }];
    }),
  );
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
