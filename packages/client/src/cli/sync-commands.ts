// `sync`, and through registerMirrorCommands `mirror status` and `mirror export`: registered into the service's
// `crm-export` command and into this package's own `crm-export-sync` bin.
import cliProgress from 'cli-progress';
import { type Command, Option } from 'commander';
import pino from 'pino';
import { CrmExportClient } from '../client/crm-export-client.js';
import { MirrorStore } from '../sync/mirror-store.js';
import { openMirror } from '../sync/open-mirror.js';
import { SyncEngine } from '../sync/sync-engine.js';
import type { SyncProgress, SyncWait } from '../sync/sync-engine-options.js';
import { SyncLockError } from '../sync/sync-lock.js';
import { registerMirrorCommands } from './mirror-commands.js';
import { positiveNumber } from './positive-number.js';

interface SyncFlags {
  baseUrl: string;
  key?: string;
  into: string;
  once?: boolean;
  team?: string;
  interval: number;
  expectedItems?: number;
}

/** Adds `sync`, `mirror status` and `mirror export` to `program`. */
export function registerSyncCommands(program: Command): void {
  program
    .command('sync')
    .description('Keep a mirror of the key’s CRM data current in SQLite or PostgreSQL by polling the changes feed')
    .requiredOption('--base-url <url>', 'service address including /v1')
    .addOption(new Option('--key <key>', 'API key').env('CRM_EXPORT_KEY'))
    .requiredOption('--into <target>', 'sqlite:PATH or postgres://...', 'sqlite:crm-mirror.db')
    .option('--once', 'stop once every team is caught up')
    .option('--team <id>', 'sync only this team')
    .option(
      '--interval <seconds>',
      'wait between polls once caught up (1 to 5 minutes)',
      positiveNumber('--interval'),
      60,
    )
    .option(
      '--expected-items <n>',
      'items an initial sync will read, for the progress estimate',
      positiveNumber('--expected-items'),
    )
    .action(async (flags: SyncFlags) => {
      process.exitCode = await runSync(flags);
    });

  registerMirrorCommands(program);
}

async function runSync(flags: SyncFlags): Promise<number> {
  const tty = Boolean(process.stderr.isTTY);
  // On a terminal the progress bar speaks; otherwise quiet structured logs (never keys or record data).
  const logger = pino({ level: tty ? 'warn' : 'info', base: { cmd: 'sync' } }, pino.destination(2));
  if (!flags.key) {
    logger.error({}, 'no API key: pass --key or set CRM_EXPORT_KEY');
    process.stderr.write('crm-export sync: no API key (--key or CRM_EXPORT_KEY)\n');
    return 2;
  }
  const stop = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    // The first signal lets the current page commit (or not start); a second one exits at once.
    if (signals > 1) process.exit(130);
    logger.info({ signal }, 'stopping after the current page');
    stop.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const mirror = await openMirror(flags.into);
  const bars = tty
    ? new cliProgress.MultiBar({ ...progressFormat(flags.expectedItems), clearOnComplete: false, hideCursor: true })
    : null;
  const teamBars = new Map<string, { bar: cliProgress.SingleBar; started: number }>();
  const onProgress = (p: SyncProgress) => {
    if (!bars || !p.initial) return;
    let entry = teamBars.get(p.team);
    if (!entry) {
      entry = {
        bar: bars.create(flags.expectedItems ?? 0, 0, { team: p.team, rate: 0, status: '' }),
        started: Date.now(),
      };
      teamBars.set(p.team, entry);
    }
    const seconds = Math.max(0.001, (Date.now() - entry.started) / 1000);
    // A page arrived: any wait shown before is over.
    entry.bar.update(p.items, { team: p.team, rate: Math.round(p.items / seconds), status: '' });
  };
  // A wait for the key's item budget shows on the bars it holds up (all of them when it is the key's).
  const onWait = (w: SyncWait) => {
    const status = `| ${waitStatus(w)}`;
    for (const [team, entry] of teamBars) if (w.team === undefined || w.team === team) entry.bar.update({ status });
  };
  try {
    const client = new CrmExportClient({
      baseUrl: flags.baseUrl,
      key: flags.key,
      onRetry: ({ route, attempt, delayMs, error }) =>
        logger.warn({ route, attempt, delay_ms: delayMs, status: error.status, code: error.code }, 'retrying'),
    });
    const engine = new SyncEngine({
      client,
      store: new MirrorStore(mirror.db),
      key: flags.key,
      team: flags.team,
      once: flags.once,
      intervalMs: flags.interval * 1000,
      logger,
      onProgress,
      onWait,
      signal: stop.signal,
    });
    const outcomes = await engine.run();
    logger.info({ outcomes }, 'sync finished');
    return Object.values(outcomes).some((o) => o === 'restricted' || o === 'not_accessible') ? 1 : 0;
  } catch (err) {
    const message = err instanceof SyncLockError || err instanceof Error ? err.message : String(err);
    logger.error({ err: message }, 'sync failed');
    if (tty) process.stderr.write(`\ncrm-export sync: ${message}\n`);
    return 1;
  } finally {
    bars?.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await mirror.close();
  }
}

/** Why the sync waits, in words: `waiting 37 s: items this minute spent (12 left, next request takes 100)`. */
export function waitStatus(w: SyncWait): string {
  const seconds = Math.ceil(w.waitMs / 1000);
  const left = w.remaining === undefined ? '' : ` (${w.remaining} left, next request takes ${w.needed})`;
  const why = {
    'items-minute': `items this minute spent${left}`,
    'items-day': `daily item quota spent${left}; resumes after 00:00 UTC`,
    rate_limited: 'rate limited (429), waiting Retry-After',
    quota_exceeded: 'daily quota exceeded (429), waiting Retry-After',
  }[w.reason];
  return `waiting ${seconds} s: ${why}`;
}

function progressFormat(expected: number | undefined): cliProgress.Options {
  return {
    format: expected
      ? '{team} [{bar}] {value}/{total} items | {rate} items/s | ETA {eta_formatted} {status}'
      : '{team} {value} items | {rate} items/s | {duration_formatted} elapsed (estimate: pass --expected-items) {status}',
    etaBuffer: 50,
    barsize: 30,
  };
}
