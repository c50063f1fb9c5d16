import type { TSchema } from 'typebox';
import { ERROR_CATALOGUE, type ErrorCode } from '../../errors/catalogue.js';
import { Problem } from '../../schemas/envelope.js';
import { RELEASE } from '../../service-names.js';
import { MANAGE_SCOPES } from '../action.js';
import { type ManageEndpoint, openapiPath, pathSchema, restOfInput } from './endpoint.js';
import { MANAGE_ENDPOINTS } from './endpoints.js';

// The OpenAPI 3.1 document of the management API, built from the declarations (endpoints.ts) and their
// actions' schemas. docs/management-openapi.json holds it as committed; a test fails when it is stale
// (regenerate with `npx tsx packages/service/scripts/generate-management-openapi.ts`).

/** Codes every endpoint may answer: the token checks, a bad input, a failure of the service. */
const EVERY_ENDPOINT: readonly ErrorCode[] = [
  'invalid_request',
  'invalid_token',
  'api_key_not_token',
  'insufficient_scope',
  'rate_limited',
  'internal_error',
  'service_unavailable',
];
/** Codes a change may answer beyond those. */
const CHANGES: readonly ErrorCode[] = [
  'resource_missing',
  'action_refused',
  'plan_not_entitled',
  'team_state_restricted',
  'sector_restricted',
  'idempotency_key_reused',
  'idempotency_key_in_use',
  'body_too_large',
];

const HEADER = (name: string, description: string, pattern?: string) => ({
  name,
  in: 'header',
  required: false,
  description,
  schema: { type: 'string', ...(pattern ? { pattern } : {}) },
});

function errorsOf(endpoint: ManageEndpoint): ErrorCode[] {
  const codes = [...EVERY_ENDPOINT];
  if (endpoint.method === 'POST') codes.push(...CHANGES);
  else if (endpoint.path) codes.push('resource_missing');
  return codes;
}

function operation(endpoint: ManageEndpoint) {
  const { action } = endpoint;
  const rest = restOfInput(endpoint) as unknown as { properties: Record<string, TSchema>; required?: string[] };
  const path = pathSchema(endpoint) as unknown as { properties: Record<string, TSchema> } | undefined;
  const parameters: unknown[] = Object.entries(path?.properties ?? {}).map(([name, schema]) => ({
    name,
    in: 'path',
    required: true,
    schema,
  }));
  if (endpoint.method === 'GET') {
    for (const [name, schema] of Object.entries(rest.properties)) {
      parameters.push({ name, in: 'query', required: rest.required?.includes(name) ?? false, schema });
    }
  } else {
    parameters.push(
      HEADER(
        'Idempotency-Key',
        'Runs the change once: the same key and request answer the first answer again for 24 hours.',
      ),
      HEADER('On-Behalf-Of', "The person the caller acts for, recorded in the audit trail with the token's name."),
    );
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorsOf(endpoint)) {
    const status = ERROR_CATALOGUE[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return {
    operationId: action.name,
    summary: action.summary,
    description: `Needs an operator token with the \`${action.scope}\` scope.`,
    'x-scope': action.scope,
    security: [{ operatorToken: [] }],
    ...(parameters.length ? { parameters } : {}),
    ...(endpoint.method === 'POST'
      ? { requestBody: { required: false, content: { 'application/json': { schema: rest } } } }
      : {}),
    responses: {
      [endpoint.status ?? 200]: { description: 'OK', content: { 'application/json': { schema: action.output } } },
      ...Object.fromEntries(
        [...byStatus].map(([status, codes]) => [
          status,
          {
            description: codes.map((c) => `\`${c}\``).join(', '),
            content: {
              'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' }, 'x-error-codes': codes },
            },
          },
        ]),
      ),
    },
  };
}

/** The document: every endpoint, its scope, its schemas and its error codes. */
export function managementOpenapi(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const endpoint of MANAGE_ENDPOINTS) {
    const path = `/manage/v1${openapiPath(endpoint.url)}`;
    paths[path] = { ...paths[path], [endpoint.method.toLowerCase()]: operation(endpoint) };
  }
  // Plain JSON: TypeBox's symbols and `$id`s stay out, and the document is the same text every time.
  return JSON.parse(
    JSON.stringify({
      openapi: '3.1.0',
      info: {
        title: 'crm-export management API',
        version: '1',
        description: [
          'Manage organizations, teams, integrations, keys, allowlists, lockouts, switches and sandbox faults; read the audit trail.',
          `Served on the internal listener only. Scopes: ${MANAGE_SCOPES.map((s) => `\`${s}\``).join(', ')}.`,
          'Generated from the endpoint declarations by packages/service/scripts/generate-management-openapi.ts; do not edit.',
        ].join('\n\n'),
      },
      servers: [{ url: 'http://127.0.0.1:3002', description: 'the internal listener of a local `crm-export start`' }],
      'x-release': RELEASE,
      components: {
        securitySchemes: {
          operatorToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'cxo_... operator token (crm-export admin tokens create)',
          },
        },
        schemas: {
          // The public API's problem body, and on a refused action `reason` (the admin code) and `detail`.
          Problem: {
            ...Problem,
            properties: {
              ...Problem.properties,
              reason: { type: 'string', description: 'the code `crm-export admin` prints for this refusal' },
              detail: { type: 'string', description: 'what was refused' },
            },
          },
        },
      },
      paths,
    }),
  );
}
