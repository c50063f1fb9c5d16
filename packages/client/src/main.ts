// The `crm-export-sync` command: the same `sync` and `mirror status` commands as `crm-export`, standalone.
import { Command } from 'commander';
import { registerFaultProxyCommand, registerSyncCommands, registerTortureCommand } from './cli.js';
import { strictArgs } from './strict-args.js';

const program = new Command('crm-export-sync')
  .description('Reference consumer of the crm-export API')
  .showHelpAfterError()
  .showSuggestionAfterError();
registerSyncCommands(program);
registerFaultProxyCommand(program);
registerTortureCommand(program);
// An unknown command or option fails (exit code 1, with a suggestion), even beside --help.
await program.parseAsync(strictArgs(program, process.argv.slice(2)), { from: 'user' });
