// The package's `./cli` export: the commands, one file each under cli/, for the service's `crm-export` command
// and this package's own `crm-export-sync` bin.
export { registerFaultProxyCommand } from './cli/fault-proxy-command.js';
export { registerSyncCommands, waitStatus } from './cli/sync-commands.js';
export { formatVerdict, registerTortureCommand } from './cli/torture-command.js';
