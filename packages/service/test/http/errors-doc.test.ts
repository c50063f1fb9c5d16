import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, ERROR_CODES } from '../../src/errors/catalogue.js';

const ROOT = new URL('../../../../', import.meta.url);
const ERRORS_DOC = readFileSync(fileURLToPath(new URL('docs/errors.md', ROOT)), 'utf8');
const SPEC = readFileSync(fileURLToPath(new URL('../shared/spec/export-api-spec.md', ROOT)), 'utf8');

/** The rows of the spec's "### Codes" table, plus codes its text names outside the table. */
function specCodes(): { code: string; status: number | null }[] {
  const section = SPEC.slice(SPEC.indexOf('### Codes'), SPEC.indexOf('\nRules:', SPEC.indexOf('### Codes')));
  const rows = [...section.matchAll(/^\| (\d{3}) \| ([a-z_]+) \|/gm)].map((m) => ({
    code: m[2] as string,
    status: Number(m[1]),
  }));
  const extra = [...SPEC.matchAll(/code `([a-z_]+)`/g)].map((m) => ({ code: m[1] as string, status: null }));
  return [...rows, ...extra];
}

describe('error catalogue', () => {
  it('every code named in the spec is in the catalogue with the spec status', () => {
    const codes = specCodes();
    expect(codes.length).toBeGreaterThanOrEqual(20);
    for (const { code, status } of codes) {
      expect(ERROR_CODES, code).toContain(code);
      if (status !== null) expect(ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE].status, code).toBe(status);
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
