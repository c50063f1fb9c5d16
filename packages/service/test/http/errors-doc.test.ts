import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, ERROR_CODES } from '../../src/errors/catalogue.js';

const ROOT = new URL('../../../../', import.meta.url);
const ERRORS_DOC = readFileSync(fileURLToPath(new URL('docs/errors.md', ROOT)), 'utf8');
/**
 * The codes and statuses the API promises its consumers (docs/contract.md, docs/errors.md). Pinned here so
 * that changing a code's status, or dropping a code, is a deliberate edit of the contract and this test.
 */
const CONTRACT_CODES: Record<string, number> = {
  invalid_request: 400,
  team_required: 400,
  secret_key_in_browser: 400,
  invalid_credentials: 401,
  key_expired: 401,
  insufficient_scope: 403,
  plan_not_entitled: 403,
  ip_not_allowed: 403,
  team_state_restricted: 403,
  sector_restricted: 403,
  capability_disabled: 403,
  resource_missing: 404,
  team_not_accessible: 404,
  resync_required: 409,
  capture_not_ready: 409,
  sync_cursor_expired: 410,
  rate_limited: 429,
  quota_exceeded: 429,
  internal_error: 500,
  api_disabled: 503,
  service_unavailable: 503,
};

describe('error catalogue', () => {
  it('every code of the contract is in the catalogue with the contract status', () => {
    for (const [code, status] of Object.entries(CONTRACT_CODES)) {
      expect(ERROR_CODES, code).toContain(code);
      expect(ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE].status, code).toBe(status);
    }
  });

  it('every catalogue code is documented in docs/errors.md with its status and retry advice', () => {
    for (const code of ERROR_CODES) {
      const entry = ERROR_CATALOGUE[code];
      const heading = ERRORS_DOC.indexOf(`\n## ${code}\n`);
      expect(heading, `docs/errors.md has no "## ${code}" section`).toBeGreaterThan(-1);
      const next = ERRORS_DOC.indexOf('\n## ', heading + 1);
      const section = ERRORS_DOC.slice(heading, next < 0 ? undefined : next);
      expect(section, code).toContain(`HTTP ${entry.status}`);
      expect(section, code).toContain(`Retry: ${entry.retry}`);
    }
  });

  it('docs/errors.md documents no code the catalogue lacks', () => {
    const documented = [...ERRORS_DOC.matchAll(/^## ([a-z_]+)$/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual([...ERROR_CODES].sort());
  });
});
