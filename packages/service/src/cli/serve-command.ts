import type { Command } from 'commander';
import { settingOption } from '../settings/read-setting.js';
import { internalLine, openDb, opsLine, serverSettings } from './options.js';
import {
  exitOnStartFailure,
  isFirstWorker,
  isWorker,
  reportListening,
  runPrimary,
  workerMetrics,
} from './serve-workers.js';

interface ServeOptions {
  db?: string;
  host?: string;
  port?: number;
  trustProxy?: string;
  workers?: number;
  opsHost?: string;
  opsPort?: number;
  docsUrl?: string;
  internalHost?: string;
  internalPort?: number;
}

export function registerServeCommand(program: Command): void {
  const command = program
    .command('serve')
    .description('serve the export API')
    .addOption(settingOption('db', 'database URL, created and migrated when missing'))
    .addOption(settingOption('host'))
    .addOption(settingOption('port'))
    .addOption(settingOption('trustProxy'))
    .addOption(settingOption('workers'))
    .addOption(settingOption('opsPort'))
    .addOption(settingOption('opsHost'))
    .addOption(settingOption('docsUrl'))
    .addOption(settingOption('internalPort'))
    .addOption(settingOption('internalHost'));
  command.action(async (opts: ServeOptions) => {
    const settings = serverSettings(opts);
    if ((opts.workers ?? 1) > 1 && !isWorker()) {
      const started = await runPrimary({ ...settings, workers: opts.workers as number, db: opts.db });
      if (started.opsOrigin) process.stdout.write(opsLine(started.opsOrigin));
      if (started.internalOrigin) process.stdout.write(internalLine(started.internalOrigin));
      process.stdout.write(`crm-export is serving ${started.origin}/v1\nworkers: ${opts.workers}\n`);
      return;
    }
    try {
      const { startServer } = await import('../server.js');
      const store = await openDb(opts.db, { create: true });
      try {
        // A worker counts for the primary, which serves the operator listener for all of them.
        const { ops, ...rest } = settings;
        const server = await startServer({
          store,
          ...rest,
          feedJobs: !isWorker() || isFirstWorker(),
          ...(isWorker() ? (ops ? { metrics: await workerMetrics() } : {}) : ops ? { ops } : {}),
        });
        if (isWorker()) reportListening(server.origin, server.shutdown, server.internalOrigin);
        else {
          if (server.opsOrigin) process.stdout.write(opsLine(server.opsOrigin));
          if (server.internalOrigin) process.stdout.write(internalLine(server.internalOrigin));
          process.stdout.write(`crm-export is serving ${server.origin}/v1\n`);
        }
      } catch (error) {
        await store.close();
        throw error;
      }
    } catch (error) {
      // The primary decides whether to start another worker or give up.
      if (isWorker()) await exitOnStartFailure(error);
      throw error;
    }
  });
}
