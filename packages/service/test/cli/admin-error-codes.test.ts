import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ADMIN_ERROR_CODES } from '../../src/errors/admin-error.js';

// The operator commands' error codes are documented in docs/operations.md ("Errors of the operator
// commands"): every code the code can raise has a row, and every row is a code the code can raise.

const doc = readFileSync(fileURLToPath(new URL('../../../../docs/operations.md', import.meta.url)), 'utf8');

function documentedCodes(): string[] {
  const section = doc.split('## Errors of the operator commands')[1] ?? '';
  return [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1] as string);
}

describe('the admin error codes', () => {
  it('are documented in docs/operations.md, each once, and nothing else is', () => {
    const documented = documentedCodes();
    expect(new Set(documented).size).toBe(documented.length);
    expect([...documented].sort()).toEqual([...ADMIN_ERROR_CODES].sort());
  });
});
