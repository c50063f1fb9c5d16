import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_NAMES } from '../../src/access/endpoints.js';
import { API_DOC_PATH, ENDPOINTS, withEndpointsTable } from '../../src/http/endpoints.js';

const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

describe('endpoint declarations', () => {
  it('the endpoints table of docs/api.md is the one the declarations generate (run scripts/generate-api-doc.ts)', () => {
    const doc = readFileSync(`${REPO_ROOT}${API_DOC_PATH}`, 'utf8');
    expect(doc).toBe(withEndpointsTable(doc));
    for (const e of ENDPOINTS) expect(doc).toContain(`| \`${e.method} ${e.url.replace(':id', '{id}')}\` |`);
  });

  it('every endpoint name is declared exactly once', () => {
    expect(ENDPOINTS.map((e) => e.name).sort()).toEqual([...ENDPOINT_NAMES].sort());
  });

  it('an endpoint whose path names a record takes its team from that record', () => {
    for (const e of ENDPOINTS) expect([e.name, e.url.includes(':id')]).toEqual([e.name, e.team.from === 'record']);
  });

  it('only an endpoint without a key goes uncharged, and only one with a body is a POST', () => {
    for (const e of ENDPOINTS) {
      expect([e.name, e.charge === null]).toEqual([e.name, e.caller === 'no_key']);
      expect([e.name, e.method === 'POST']).toEqual([e.name, e.body !== undefined]);
    }
  });
});
