import { registerSyncCommands } from '@crm-export/client/cli';
import { Command } from 'commander';
import { RELEASE } from '../config.js';
import { registerAdminCommands } from './admin.js';
import { registerDemoCommand } from './demo-command.js';
import { registerFeedCommands } from './feed-commands.js';
import { registerIngestCommand } from './ingest-command.js';
import { openDb } from './options.js';
import { registerServeCommand } from './serve-command.js';
import { registerStartCommand } from './start-command.js';

/** The command tree of `crm-export`; every subcommand opens the store through the same `--db` rules. */
export function buildProgram(): Command {
  const program = new Command('crm-export')
    .description('read-only CRM export service')
    .version(RELEASE.split('@')[1] ?? RELEASE)
    .showHelpAfterError();
  registerStartCommand(program);
  registerServeCommand(program);
  registerDemoCommand(program);
  registerIngestCommand(program);
  registerAdminCommands(program, openDb);
  registerFeedCommands(program, openDb);
  // The reference consumer (packages/client): `sync` and `mirror status`.
  registerSyncCommands(program);
  return program;
}
