import type { Command } from 'commander';
import { intOption, openDb, serverSettings } from './options.js';
import { isFirstWorker, isWorker, reportListening, runPrimary } from './serve-workers.js';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve the export API')
    .option('--db <url>', 'database URL (default: DATABASE_URL, else sqlite:./data/crm-export.db)')
    .option('--host <host>', 'address to listen on (default: HOST, else 127.0.0.1)')
    .option('--port <port>', 'port to listen on, 0 for any free port (default: PORT, else 3000)', intOption(0, 65535))
    .option(
      '--workers <n>',
      'API processes sharing the port, the database and Redis (needs REDIS_URL)',
      intOption(1, 64),
    )
    .action(async (opts: { db?: string; host?: string; port?: number; workers?: number }) => {
      const settings = serverSettings(opts);
      if ((opts.workers ?? 1) > 1 && !isWorker()) {
        const origin = await runPrimary({ workers: opts.workers as number, db: opts.db, redisUrl: settings.redisUrl });
        process.stdout.write(`crm-export is serving ${origin}/v1\nworkers: ${opts.workers}\n`);
        return;
      }
      const { startServer } = await import('../server.js');
      const store = await openDb(opts.db);
      try {
        const server = await startServer({ store, ...settings, feedJobs: !isWorker() || isFirstWorker() });
        if (isWorker()) reportListening(server.origin);
        else process.stdout.write(`crm-export is serving ${server.origin}/v1\n`);
      } catch (error) {
        await store.close();
        throw error;
      }
    });
}
