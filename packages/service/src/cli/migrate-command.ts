import type { Command } from 'commander';
import { settingOption } from '../settings/read-setting.js';
import { openDb, resolveDbUrl } from './options.js';
import { jsonText, printable } from './terminal-text.js';

/** `crm-export migrate`: creates the database when missing and applies pending migrations, then exits. */
export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('create the database if missing and apply pending migrations (what start, serve and demo do first)')
    .addOption(settingOption('db', 'database URL, created when missing'))
    .option('--json', 'print JSON')
    .action(async (opts: { db?: string; json?: boolean }) => {
      const url = resolveDbUrl(opts.db);
      const store = await openDb(opts.db, { create: true });
      try {
        const pending = await store.pendingMigrations();
        const result = { database: url.replace(/\/\/[^@/]*@/, '//***@'), backend: store.backend, pending };
        process.stdout.write(
          opts.json
            ? `${jsonText(result)}\n`
            : `database ${printable(result.database)} is migrated (${store.backend})\n`,
        );
      } finally {
        await store.close();
      }
    });
}
