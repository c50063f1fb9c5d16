// The `crm-export-sync` command: the same `sync` and `mirror status` commands as `crm-export`, standalone.
import { Command } from 'commander';
import { registerFaultProxyCommand, registerSyncCommands } from './cli.js';

const program = new Command('crm-export-sync').description('Reference consumer of the crm-export API');
registerSyncCommands(program);
registerFaultProxyCommand(program);
await program.parseAsync(process.argv);
