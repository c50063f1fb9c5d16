// Writes the generated endpoints table of docs/api.md from the endpoint declarations:
// npx tsx packages/service/scripts/generate-api-doc.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_DOC_PATH, withEndpointsTable } from '../src/http/endpoints.js';

const path = join(dirname(fileURLToPath(import.meta.url)), '../../..', API_DOC_PATH);
writeFileSync(path, withEndpointsTable(readFileSync(path, 'utf8')));
process.stdout.write(`wrote ${API_DOC_PATH}\n`);
