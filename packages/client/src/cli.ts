// `sync` and `mirror status`: registered into the service's `crm-export` command and into this package's
// own `crm-export-sync` bin.
import cliProgress from 'cli-progress';
import { type Command, InvalidArgumentError, Option } from 'commander';
import pino from 'pino';
import { CrmExportClient } from './client/crm-export-client.js';
import { FAULT_KINDS, type FaultKind, randomPlan } from './fault-proxy/fault-plan.js';
import { startFaultProxy } from './fault-proxy/fault-proxy.js';
import { printable } from './printable.js';
import { isMirrorFile } from './sync/mirror-files.js';
import { mirrorStatus } from './sync/mirror-status.js';
import { MirrorStore } from './sync/mirror-store.js';
import { openMirror } from './sync/open-mirror.js';
import { SyncEngine } from './sync/sync-engine.js';
import type { SyncProgress, SyncWait } from './sync/sync-engine-options.js';
import { SyncLockError } from './sync/sync-lock.js';
import { type DemoService, startDemoService } from './torture/demo-service.js';
import { HISTORIES } from './torture/histories.js';
import { exportMirror } from './torture/mirror-export.js';
import { signalStartedGroups } from './torture/process-groups.js';
import { type HistoryVerdict, referenceConsumerCommand, runTorture, selectHistories } from './torture/torture.js';

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
            .map(([k, n]) => `${printable(k)}=${n}`)
            .join(' ');
          const age = t.cursor_age_seconds === null ? 'no cursor yet' : `cursor ${t.cursor_age_seconds}s old`;
          process.stdout.write(`${printable(t.team)}: ${age}; ${counts || 'no records'}; tombstones=${t.tombstones}`);
          process.stdout.write(`; last error: ${t.last_error === null ? 'none' : printable(t.last_error)}\n`);
        }
      } finally {
        await m.close();
      }
    });
  mirror
    .command('export')
    .description(
      'Write every record of the mirror as NDJSON lines {team, kind, id, version, record} (the torture kit’s copy format)',
    )
    .requiredOption('--into <target>', 'sqlite:PATH or postgres://...')
    .option('--out <path>', 'file to write (default: standard output); never the mirror itself')
    .action(async (flags: { into: string; out?: string }) => {
      if (flags.out !== undefined && isMirrorFile(flags.into, flags.out)) {
        process.stderr.write(
          `crm-export mirror export: --out ${printable(flags.out)} is the mirror ${printable(flags.into)} or a file SQLite keeps beside it: write it elsewhere\n`,
        );
        process.exitCode = 2;
        return;
      }
      const m = await openMirror(flags.into);
      try {
        await exportMirror(m.db, flags.out);
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

interface TortureFlags {
  baseUrl: string;
  startService?: string;
  key?: string;
  consumer?: string;
  reference?: boolean;
  histories?: string;
  holdBack: number;
  runTimeout: number;
  keepState?: boolean;
  json?: boolean;
  list?: boolean;
}

/** The torture kit: scripted failure histories against a consumer command, judged against the lists. */
export function registerTortureCommand(program: Command): void {
  program
    .command('torture')
    .description(
      'Run a consumer through scripted failure histories behind a fault proxy and judge its copy against the lists',
    )
    .option(
      '--base-url <url>',
      'the service (plain http:// on this machine), including /v1',
      'http://127.0.0.1:3000/v1',
    )
    .addOption(new Option('--key <key>', 'API key (the consumer gets it as CRM_EXPORT_KEY)').env('CRM_EXPORT_KEY'))
    .option(
      '--start-service <command>',
      'start a throwaway service with demo data instead, with this crm-export command (e.g. "npx crm-export")',
    )
    .option('--consumer <command>', 'shell command of the consumer (see docs/torture-kit.md for its contract)')
    .option('--reference', 'judge the reference consumer (crm-export-sync sync --once, then mirror export)')
    .option('--histories <names>', 'comma-separated histories (default: all; --list names them)')
    .option('--hold-back <seconds>', 'the service’s feed hold-back', Number, 10)
    .option('--run-timeout <seconds>', 'longest one consumer run may take', positive('--run-timeout'), 120)
    .option('--keep-state', 'keep each history’s state directory and print where it is')
    .option('--json', 'print the verdicts as one JSON object')
    .option('--list', 'list the histories and exit')
    .action(async (flags: TortureFlags) => {
      process.exitCode = await runTortureCommand(flags);
    });
}

async function runTortureCommand(flags: TortureFlags): Promise<number> {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  if (flags.list) {
    for (const h of HISTORIES) say(`${h.name}: ${h.summary}`);
    return 0;
  }
  const fail = (message: string) => {
    process.stderr.write(`crm-export-sync torture: ${message}\n`);
    return 2;
  };
  if (!flags.key && !flags.startService) return fail('no API key (--key or CRM_EXPORT_KEY), nor --start-service');
  if (Boolean(flags.consumer) === Boolean(flags.reference))
    return fail('pass exactly one of --consumer and --reference');
  if (!Number.isFinite(flags.holdBack) || flags.holdBack < 0) return fail('--hold-back must be 0 or more seconds');
  let histories: string[] | undefined;
  try {
    histories = flags.histories
      ?.split(',')
      .map((h) => h.trim())
      .filter((h) => h.length > 0);
    selectHistories(histories);
  } catch (err) {
    return fail((err as Error).message);
  }
  let service: DemoService | undefined;
  // The consumers and the service run in process groups of their own: a signal to the kit stops them too.
  const onSignal = (signal: NodeJS.Signals) => {
    signalStartedGroups(signal === 'SIGINT' ? 'SIGTERM' : signal);
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    if (flags.startService) {
      service = await startDemoService(flags.startService);
      process.stderr.write(`started a throwaway service with demo data at ${service.baseUrl}\n`);
    }
    const result = await runTorture({
      baseUrl: service?.baseUrl ?? flags.baseUrl,
      key: service?.key ?? (flags.key as string),
      consumer: flags.consumer ?? referenceConsumerCommand(),
      histories,
      holdBackMs: service ? 0 : flags.holdBack * 1000,
      runTimeoutMs: flags.runTimeout * 1000,
      keepState: flags.keepState,
      ...(service ? { service } : {}),
      log: flags.json ? undefined : (line) => process.stderr.write(`${line}\n`),
    });
    if (flags.json) say(JSON.stringify(result));
    else {
      say(`${result.records} records of ${result.teams.length} team(s) in the lists`);
      for (const v of result.verdicts) say(formatVerdict(v));
      const skipped = result.verdicts.filter((v) => v.skipped).length;
      const passed = skipped > 0 ? `verdict: PASS (${skipped} history(ies) skipped)` : 'verdict: PASS (every history)';
      say(result.pass ? passed : 'verdict: FAIL');
    }
    return result.pass ? 0 : 1;
  } catch (err) {
    process.stderr.write(`crm-export-sync torture: ${(err as Error).message}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await service?.close();
  }
}

/** `PASS clean (812 records, 1 run(s), 2.1 s)` or `FAIL ...` with the first differences indented. */
export function formatVerdict(v: HistoryVerdict): string {
  if (v.skipped) return `SKIP ${v.history} (${v.skipped})`;
  const seconds = (v.runs.reduce((s, r) => s + r.ms, 0) / 1000).toFixed(1);
  const injected = Object.entries(v.injected)
    .map(([k, n]) => `${k}=${n}`)
    .join(' ');
  // A run that failed leaves nothing to compare: say so instead of "0 records".
  const compared = v.compared > 0 ? `${v.compared} records` : 'copy not compared';
  const killed = v.runs.filter((r) => r.killed).length;
  const runs = `${v.runs.length} run(s)${killed > 0 ? `, ${killed} killed` : ''}`;
  const head = `${v.pass ? 'PASS' : 'FAIL'} ${v.history} (${compared}, ${runs}, ${seconds} s${injected ? `; injected ${injected}` : ''}${v.unjudged ? `; ${v.unjudged} unknown-kind record(s) kept` : ''})`;
  const lines = [head, ...v.failures.map((f) => `  - ${f}`)];
  if (!v.pass && v.stderrTail)
    lines.push(
      ...v.stderrTail
        .trimEnd()
        .split('\n')
        .slice(-5)
        .map((l) => `  | ${l}`),
    );
  if (v.stderrFile) lines.push(`  the consumer's standard error, every run: ${v.stderrFile}`);
  if (v.stateDir) lines.push(`  state: ${v.stateDir}`);
  return lines.join('\n');
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
