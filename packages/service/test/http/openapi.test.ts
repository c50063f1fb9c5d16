import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openapiDocument, openapiText } from '../../src/http/openapi-document.js';

const COMMITTED = fileURLToPath(new URL('../../../../openapi.json', import.meta.url));

describe('openapi.json', () => {
  it('the committed openapi.json is what the route schemas generate (run scripts/generate-openapi.ts when this fails)', async () => {
    const generated = openapiText(await openapiDocument());
    expect(readFileSync(COMMITTED, 'utf8')).toBe(generated);
  });

  it('describes every endpoint of the spec summary table as OpenAPI 3.1, marked generated', async () => {
    const doc = (await openapiDocument()) as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
      info: { description: string };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.description).toMatch(/Generated/);
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(operations.sort()).toEqual(
      [
        'GET /v1/me',
        'GET /v1/teams',
        'GET /v1/teams/{id}',
        'GET /v1/members',
        'GET /v1/boards',
        'GET /v1/booking_services',
        'GET /v1/leads',
        'GET /v1/leads/{id}',
        'POST /v1/leads/search',
        'GET /v1/leads/{id}/activities',
        'GET /v1/calls',
        'GET /v1/calls/{id}',
        'GET /v1/conversations',
        'GET /v1/conversations/{id}',
        'GET /v1/bookings',
        'GET /v1/bookings/{id}',
        'GET /v1/sync/changes',
        'GET /v1/health',
      ].sort(),
    );
  });
});
