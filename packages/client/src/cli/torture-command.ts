import { type Command, Option } from 'commander';
import { type DemoService, startDemoService } from '../torture/demo-service.js';
import { HISTORIES } from '../torture/histories.js';
import { signalStartedGroups } from '../torture/process-groups.js';
import { type HistoryVerdict, referenceConsumerCommand, runTorture, selectHistories } from '../torture/torture.js';
import { positiveNumber } from './positive-number.js';

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
    .option('--run-timeout <seconds>', 'longest one consumer run may take', positiveNumber('--run-timeout'), 120)
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
