import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ACTIONS } from '../../src/manage/actions.js';
import { MANAGE_ENDPOINTS } from '../../src/manage/api/endpoints.js';
import { managementOpenapi } from '../../src/manage/api/openapi.js';

// The management API's OpenAPI document is generated from its declarations and committed
// (docs/management-openapi.json); the listener serves the same document at /manage/v1/openapi.json.

const committed = fileURLToPath(new URL('../../../../docs/management-openapi.json', import.meta.url));

describe('management API OpenAPI', () => {
  it('the committed document is what the declarations generate (regenerate: scripts/generate-management-openapi.ts)', () => {
    expect(readFileSync(committed, 'utf8')).toBe(`${JSON.stringify(managementOpenapi(), null, 2)}\n`);
  });

  it('every action is reachable through exactly one endpoint, which names its scope', () => {
    const names = MANAGE_ENDPOINTS.map((e) => e.action.name).sort();
    expect(names).toEqual([...ACTIONS.keys()].sort());
    const paths = managementOpenapi().paths as Record<string, Record<string, { 'x-scope': string }>>;
    for (const endpoint of MANAGE_ENDPOINTS) {
      const path = `/manage/v1${endpoint.url.replace(/:([A-Za-z]+)/g, '{$1}')}`;
      expect(paths[path]?.[endpoint.method.toLowerCase()]?.['x-scope'], path).toBe(endpoint.action.scope);
    }
  });
});
