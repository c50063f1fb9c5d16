import { registerSyncCommands } from '@crm-export/client/cli';
import type { Command } from 'commander';
import { registerAdminCommands } from './admin.js';
import { registerBackupCommands } from './admin-backup.js';
import { registerDemoCommand } from './demo-command.js';
import { registerFeedCommands } from './feed-commands.js';
import { registerIngestCommand } from './ingest-command.js';
import { registerMigrateCommand } from './migrate-command.js';
import { openDb } from './options.js';
import { registerRelayCommand } from './relay-command.js';
import { rootProgram } from './root-program.js';
import { registerServeCommand } from './serve-command.js';
import { registerStartCommand } from './start-command.js';

export { parseCommandLine } from './root-program.js';

/**
 * The command tree of `crm-export`; every subcommand opens the store through the same `--db` rules. Only
 * `start`, `serve`, `demo`, `ingest` and `migrate` create a database or apply migrations; the `admin`
 * commands refuse a database that does not exist or is not migrated.
 */
export function buildProgram(): Command {
  const program = rootProgram();
  registerStartCommand(program);
  registerServeCommand(program);
  registerDemoCommand(program);
  registerIngestCommand(program);
  registerMigrateCommand(program);
  registerRelayCommand(program);
  registerAdminCommands(program, openDb);
  registerFeedCommands(program, openDb);
  registerBackupCommands(program, openDb);
  // The reference consumer (packages/client): `sync`, `mirror status` and `mirror export`.
  registerSyncCommands(program);
  return program;
}
