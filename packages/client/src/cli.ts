// `sync` and `mirror status`: registered into the service's `crm-export` command and into this package's
// own `crm-export-sync` bin.
import cliProgress from 'cli-progress';
import { type Command, InvalidArgumentError, Option } from 'commander';
import pino from 'pino';
import { CrmExportClient } from './client/crm-export-client.js';
import { FAULT_KINDS, type FaultKind, randomPlan } from './fault-proxy/fault-plan.js';
import { startFaultProxy } from './fault-proxy/fault-proxy.js';
import { mirrorStatus } from './sync/mirror-status.js';
import { MirrorStore } from './sync/mirror-store.js';
import { openMirror } from './sync/open-mirror.js';
import { SyncEngine, type SyncProgress } from './sync/sync-engine.js';
import { SyncLockError } from './sync/sync-lock.js';

const positive = (name: string) => (value: string) => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a positive number`);
  return n;
};

interface SyncFlags {
  baseUrl: string;
  key?: string;
  into: string;
  once?: boolean;
  team?: string;
  interval: number;
  expectedItems?: number;
}

/** Adds `sync` and `mirror status` to `program`. */
export function registerSyncCommands(program: Command): void {
  program
    .command('sync')
    .description('Keep a mirror of the key’s CRM data current in SQLite or PostgreSQL by polling the changes feed')
    .requiredOption('--base-url <url>', 'service address including /v1')
    .addOption(new Option('--key <key>', 'API key').env('CRM_EXPORT_KEY'))
    .requiredOption('--into <target>', 'sqlite:PATH or postgres://...', 'sqlite:crm-mirror.db')
    .option('--once', 'stop once every team is caught up')
    .option('--team <id>', 'sync only this team')
    .option('--interval <seconds>', 'wait between polls once caught up (1 to 5 minutes)', positive('--interval'), 60)
    .option(
      '--expected-items <n>',
      'items an initial sync will read, for the progress estimate',
      positive('--expected-items'),
    )
    .action(async (flags: SyncFlags) => {
      process.exitCode = await runSync(flags);
    });

  const mirror = program.command('mirror').description('Inspect a mirror written by `sync`');
  mirror
    .command('status')
    .description('Each team’s cursor age, counts per kind, tombstones and last error')
    .requiredOption('--into <target>', 'sqlite:PATH or postgres://...')
    .option('--json', 'print JSON')
    .action(async (flags: { into: string; json?: boolean }) => {
      const m = await openMirror(flags.into);
      try {
        const status = await mirrorStatus(m.db);
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(status)}\n`);
          return;
        }
        if (status.teams.length === 0) process.stdout.write('no team synced yet\n');
        for (const t of status.teams) {
          const counts = Object.entries(t.counts)
            .map(([k, n]) => `${k}=${n}`)
            .join(' ');
          const age = t.cursor_age_seconds === null ? 'no cursor yet' : `cursor ${t.cursor_age_seconds}s old`;
          process.stdout.write(`${t.team}: ${age}; ${counts || 'no records'}; tombstones=${t.tombstones}`);
          process.stdout.write(`; last error: ${t.last_error ?? 'none'}\n`);
        }
      } finally {
        await m.close();
      }
    });
}

/** A fault proxy for customers testing their own consumer: random faults with a seed. */
export function registerFaultProxyCommand(program: Command): void {
  program
    .command('fault-proxy')
    .description('Run a loopback proxy in front of a service that injects the faults a consumer must survive')
    .requiredOption('--target <origin>', 'service origin, e.g. http://127.0.0.1:3000')
    .option('--port <port>', 'port to listen on', positive('--port'), 0)
    .option('--seed <n>', 'random seed', Number, 1)
    .option('--rate <share>', 'share of requests that get a fault (0 to 1)', Number, 0.2)
    .option('--kinds <list>', `comma-separated subset of: ${FAULT_KINDS.join(', ')}`)
    .action(async (flags: { target: string; port: number; seed: number; rate: number; kinds?: string }) => {
      const kinds = flags.kinds?.split(',').map((k) => k.trim()) as FaultKind[] | undefined;
      for (const k of kinds ?? []) if (!FAULT_KINDS.includes(k)) throw new InvalidArgumentError(`unknown fault ${k}`);
      const proxy = await startFaultProxy({
        target: flags.target,
        port: flags.port,
        plan: randomPlan({ seed: flags.seed, rate: flags.rate, kinds }),
      });
      process.stdout.write(`fault proxy on ${proxy.url} -> ${flags.target}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await proxy.close();
      process.stdout.write(`${JSON.stringify({ requests: proxy.requests, injected: proxy.injected })}\n`);
    });
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
      entry = { bar: bars.create(flags.expectedItems ?? 0, 0, { team: p.team, rate: 0 }), started: Date.now() };
      teamBars.set(p.team, entry);
    }
    const seconds = Math.max(0.001, (Date.now() - entry.started) / 1000);
    entry.bar.update(p.items, { team: p.team, rate: Math.round(p.items / seconds) });
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

function progressFormat(expected: number | undefined): cliProgress.Options {
  return {
    format: expected
      ? '{team} [{bar}] {value}/{total} items | {rate} items/s | ETA {eta_formatted}'
      : '{team} {value} items | {rate} items/s | {duration_formatted} elapsed (estimate: pass --expected-items)',
    etaBuffer: 50,
    barsize: 30,
  };
}
