import { buildProgram, parseCommandLine } from './program.js';
import { terminalText } from './terminal-text.js';

// The `crm-export` command, compiled to dist/cli/main.js, which bin/crm-export.js loads.
try {
  await parseCommandLine(buildProgram(), process.argv.slice(2));
} catch (error) {
  process.stderr.write(`crm-export: ${terminalText(error instanceof Error ? error.message : String(error))}\n`);
  process.exitCode = 1;
}
