// The `crm-export-sync` command: the same `sync` and `mirror status` commands as `crm-export`, standalone.
import { Command } from 'commander';
import { registerFaultProxyCommand, registerSyncCommands, registerTortureCommand } from './cli.js';

const program = new Command('crm-export-sync').description('Reference consumer of the crm-export API');
registerSyncCommands(program);
registerFaultProxyCommand(program);
registerTortureCommand(program);
await program.parseAsync(process.argv);
