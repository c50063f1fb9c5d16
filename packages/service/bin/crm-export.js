#!/usr/bin/env node
// Runs the compiled command (dist/, built by `npm install` or `npm run build`); no TypeScript at run time.
import { existsSync } from 'node:fs';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('crm-export: not built yet (no dist/): run `npm run build` at the repository root\n');
  process.exit(1);
}
await import(main.href);
