import type { Command } from 'commander';
import { rootProgram } from './root-program.js';

export { parseCommandLine } from './root-program.js';

/**
 * The long-running commands (the servers and the relay), registered alone when the command line names them:
 * they then do not load the modules of every other command (admin, demo, ingest, the client's sync) first.
 * Their help, options and errors are the same as in the whole tree.
 */
const ALONE = new Map<string, () => Promise<(program: Command) => void>>([
  ['serve', async () => (await import('./serve-command.js')).registerServeCommand],
  ['start', async () => (await import('./start-command.js')).registerStartCommand],
  // The relay is a long-running process too, restarted by its supervisor: it starts as fast as it can.
  ['relay', async () => (await import('./relay-command.js')).registerRelayCommand],
]);

/** The program that parses `args` (the words after `crm-export`): the named server command alone, else every command. */
export async function programFor(args: readonly string[]): Promise<Command> {
  const alone = args[0] === undefined ? undefined : ALONE.get(args[0]);
  if (!alone) return (await import('./program.js')).buildProgram();
  const program = rootProgram();
  (await alone())(program);
  return program;
}
