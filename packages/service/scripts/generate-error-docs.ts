// Writes packages/service/src/errors/error-docs.ts from docs/errors.md: each code's description, which the
// served error page (/docs/errors) shows. Run after editing docs/errors.md:
// `npx tsx packages/service/scripts/generate-error-docs.ts`. A test fails when stale.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseErrorDocs } from '../src/errors/parse-error-docs.js';

const source = fileURLToPath(new URL('../../../docs/errors.md', import.meta.url));
const target = fileURLToPath(new URL('../src/errors/error-docs.ts', import.meta.url));
const descriptions = parseErrorDocs(readFileSync(source, 'utf8'));
writeFileSync(
  target,
  `// Generated from docs/errors.md by packages/service/scripts/generate-error-docs.ts; do not edit.

/** Each error code's description paragraphs (inline Markdown), as docs/errors.md words them. */
export const ERROR_DESCRIPTIONS: Record<string, readonly string[]> = ${JSON.stringify(descriptions, null, 2)};
`,
);
execFileSync('npx', ['biome', 'format', '--write', target], { stdio: 'inherit' });
console.log(`wrote ${target}`);
