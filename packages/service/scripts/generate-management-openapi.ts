// Writes docs/management-openapi.json from the management API's endpoint declarations. Run after changing an
// endpoint or an action's schema: `npx tsx packages/service/scripts/generate-management-openapi.ts`. A test
// fails when stale.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { managementOpenapi } from '../src/manage/api/openapi.js';

const target = fileURLToPath(new URL('../../../docs/management-openapi.json', import.meta.url));
writeFileSync(target, `${JSON.stringify(managementOpenapi(), null, 2)}\n`);
console.log(`wrote ${target}`);
