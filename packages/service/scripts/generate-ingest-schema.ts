// Writes docs/ingest.schema.json from the TypeBox events: npx tsx packages/service/scripts/generate-ingest-schema.ts
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { INGEST_SCHEMA_PATH, ingestSchemaDocument } from '../src/ingest/ingest-schema.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const path = join(root, INGEST_SCHEMA_PATH);
writeFileSync(path, `${JSON.stringify(ingestSchemaDocument(), null, 2)}\n`);
// Formatted as `npm run check` expects (the staleness test compares the parsed JSON, not the bytes).
const biome = spawnSync(join(root, 'node_modules/.bin/biome'), ['format', '--write', path], { stdio: 'inherit' });
if (biome.status !== 0) process.exitCode = 1;
process.stdout.write(`wrote ${INGEST_SCHEMA_PATH}\n`);
