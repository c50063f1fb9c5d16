import { buildProgram } from './program.js';

// The `crm-export` command; bin/crm-export.js loads this file through tsx.
try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  process.stderr.write(`crm-export: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
