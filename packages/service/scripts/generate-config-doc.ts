// Writes the generated tables of docs/configuration.md from the settings schema:
// npx tsx packages/service/scripts/generate-config-doc.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFIG_DOC_PATH, withGeneratedTables } from '../src/settings/config-doc.js';

const path = join(dirname(fileURLToPath(import.meta.url)), '../../..', CONFIG_DOC_PATH);
writeFileSync(path, withGeneratedTables(readFileSync(path, 'utf8')));
process.stdout.write(`wrote ${CONFIG_DOC_PATH}\n`);
