// Writes /openapi.json at the repository root from the route schemas. Run after changing a route or
// a schema: `node --import tsx packages/service/scripts/generate-openapi.ts`. A test fails when stale.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openapiDocument, openapiText } from '../src/http/openapi-document.js';

const target = fileURLToPath(new URL('../../../openapi.json', import.meta.url));
writeFileSync(target, openapiText(await openapiDocument()));
console.log(`wrote ${target}`);
