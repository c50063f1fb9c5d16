import { registerSyncCommands } from '@crm-export/client/cli';
import { strictArgs } from '@crm-export/client/strict-args';
import { Command } from 'commander';
import { RELEASE } from '../service-names.js';
import { registerAdminCommands } from './admin.js';
import { registerBackupCommands } from './admin-backup.js';
import { registerDemoCommand } from './demo-command.js';
import { registerFeedCommands } from './feed-commands.js';
import { registerIngestCommand } from './ingest-command.js';
import { registerMigrateCommand } from './migrate-command.js';
import { openDb } from './options.js';
import { registerRelayCommand } from './relay-command.js';
import { registerServeCommand } from './serve-command.js';
import { registerStartCommand } from './start-command.js';
import { terminalText } from './terminal-text.js';

/**
 * The command tree of `crm-export`; every subcommand opens the store through the same `--db` rules. Only
 * `start`, `serve`, `demo`, `ingest` and `migrate` create a database or apply migrations; the `admin`
 * commands refuse a database that does not exist or is not migrated.
 */
export function buildProgram(): Command {
  const program = new Command('crm-export')
    .description('read-only CRM export service')
    .version(RELEASE.split('@')[1] ?? RELEASE)
    .showHelpAfterError()
    .showSuggestionAfterError()
    // An error can quote what was typed (an unknown command): its control characters are shown escaped.
    .configureOutput({ outputError: (text, write) => write(terminalText(text)) });
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

/**
 * Runs the command line `args` (the words after `crm-export`). A command or option this version lacks is
 * an error (exit code 1, with a suggestion) even when help or the version is asked for too.
 */
export function parseCommandLine(program: Command, args: readonly string[]): Promise<Command> {
  return program.parseAsync(strictArgs(program, args), { from: 'user' });
}
