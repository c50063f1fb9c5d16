import { parseCommandLine, programFor } from './command-line.js';
import { terminalText } from './terminal-text.js';

// The `crm-export` command, compiled to dist/cli/main.js, which bin/crm-export.js loads.
try {
  const args = process.argv.slice(2);
  await parseCommandLine(await programFor(args), args);
} catch (error) {
  process.stderr.write(`crm-export: ${terminalText(error instanceof Error ? error.message : String(error))}\n`);
  process.exitCode = 1;
}
