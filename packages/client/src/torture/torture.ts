// The torture kit: runs a consumer command through each scripted history behind the fault proxy, then
// judges the consumer's copy against the lists, read from the service directly.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CrmExportClient } from '../client/crm-export-client.js';
import type { FaultRequest } from '../fault-proxy/fault-plan.js';
import { startFaultProxy } from '../fault-proxy/fault-proxy.js';
import { type CopyRecord, compareCopy, readCopy, readLists, recordKey } from './copy.js';
import { HISTORIES, type History, type RunScript } from './histories.js';
import { signalGroup, trackGroup } from './process-groups.js';

export interface TortureOptions {
  /** The service's base URL including `/v1`; plain `http://` on this machine (the proxy forwards to it). */
  baseUrl: string;
  /** A key of the service; the consumer gets it too. */
  key: string;
  /** The consumer: a shell command run once per run of a history (see docs/torture-kit.md). */
  consumer: string;
  /** Histories to run, by name (default: all). */
  histories?: string[];
  /** The service's feed hold-back: the kit waits until the newest record is older than this (default 10 s). */
  holdBackMs?: number;
  /** Longest one run of the consumer may take before it is stopped and the history fails (default 120 s). */
  runTimeoutMs?: number;
  /** Keep each history's state directory (default: removed after its verdict). */
  keepState?: boolean;
  /** Progress lines (one per history started). */
  log?: (line: string) => void;
}

export interface RunOutcome {
  run: number;
  /** The exit code, or null when the run was stopped (timeout) or killed by a signal. */
  exitCode: number | null;
  timedOut: boolean;
  ms: number;
}

export interface HistoryVerdict {
  history: string;
  pass: boolean;
  /** Every reason it failed: runs that did not exit 0, a copy that breaks the format, differences. */
  failures: string[];
  runs: RunOutcome[];
  /** Records of the lists compared. */
  compared: number;
  /** Copy lines of kinds the lists do not serve (kept unknown kinds: allowed). */
  unjudged: number;
  /** Faults the proxy injected, by kind. */
  injected: Record<string, number>;
  /** The consumer's last lines on stderr when it failed (its own logs). */
  stderrTail?: string;
  /** The state directory, when kept. */
  stateDir?: string;
}

export interface TortureResult {
  pass: boolean;
  teams: string[];
  records: number;
  verdicts: HistoryVerdict[];
}

/** The reference consumer (`crm-export-sync sync --once` into SQLite, then `mirror export`) as a consumer command. */
export function referenceConsumerCommand(): string {
  const bin = fileURLToPath(new URL('../../bin/crm-export-sync.js', import.meta.url));
  const node = JSON.stringify(process.execPath);
  const sync = `${node} ${JSON.stringify(bin)}`;
  const into = '"sqlite:$CRM_EXPORT_STATE_DIR/mirror.db"';
  return `${sync} sync --once --base-url "$CRM_EXPORT_BASE_URL" --into ${into} && ${sync} mirror export --into ${into} --out "$CRM_EXPORT_COPY"`;
}

export function selectHistories(names?: string[]): History[] {
  if (!names || names.length === 0) return HISTORIES;
  return names.map((n) => {
    const h = HISTORIES.find((x) => x.name === n);
    if (!h) throw new Error(`unknown history ${n} (known: ${HISTORIES.map((x) => x.name).join(', ')})`);
    return h;
  });
}

const MAX_SHOWN = 5;

export async function runTorture(options: TortureOptions): Promise<TortureResult> {
  const histories = selectHistories(options.histories);
  const base = new URL(options.baseUrl.replace(/\/+$/, ''));
  if (base.protocol !== 'http:')
    throw new Error('the torture kit needs the service over plain http:// on this machine');
  const log = options.log ?? (() => {});
  const client = new CrmExportClient({ baseUrl: base.toString(), key: options.key });
  const teams = (await client.teams()).data.map((t) => t.id);
  if (teams.length === 0) throw new Error('the key reads no team');
  const expected = await readLists(client, teams);
  await settle(expected, options.holdBackMs ?? 10_000);

  let current: RunScript = { plan: { next: () => null } };
  const proxy = await startFaultProxy({
    target: base.origin,
    plan: { next: (r: FaultRequest) => current.plan.next(r) },
    rewrite: (r, body) => (current.rewrite ? current.rewrite(r, body) : body),
  });
  const verdicts: HistoryVerdict[] = [];
  try {
    for (const history of histories) {
      log(`history ${history.name}: ${history.summary}`);
      if (teams.length < history.minTeams) {
        verdicts.push({
          history: history.name,
          pass: false,
          failures: [`needs a key reading at least ${history.minTeams} teams; this one reads ${teams.length}`],
          runs: [],
          compared: 0,
          unjudged: 0,
          injected: {},
        });
        continue;
      }
      verdicts.push(await runHistory(history, { options, teams, expected, proxyUrl: proxy.url, proxy, setScript }));
    }
  } finally {
    await proxy.close();
  }
  return { pass: verdicts.every((v) => v.pass), teams, records: expected.size, verdicts };

  function setScript(s: RunScript) {
    current = s;
  }
}

interface HistoryEnv {
  options: TortureOptions;
  teams: string[];
  expected: ReadonlyMap<string, CopyRecord>;
  proxyUrl: string;
  proxy: { readonly injected: Partial<Record<string, number>> };
  setScript(s: RunScript): void;
}

async function runHistory(history: History, env: HistoryEnv): Promise<HistoryVerdict> {
  const { options, teams, expected } = env;
  const stateDir = mkdtempSync(join(tmpdir(), `crm-torture-${history.name}-`));
  const copyPath = join(stateDir, 'copy.ndjson');
  // A kit stopped by a signal exits at once: the state directory goes with it (unless kept).
  const removeState = () => {
    if (!options.keepState) rmSync(stateDir, { recursive: true, force: true });
  };
  process.once('exit', removeState);
  const before = { ...env.proxy.injected };
  const unfolding = history.start({ teams, expected });
  const runs: RunOutcome[] = [];
  const failures: string[] = [];
  let stderrTail = '';
  try {
    for (let run = 1; run <= history.runs; run++) {
      env.setScript(unfolding.script(run));
      const outcome = await runConsumer(
        options.consumer,
        {
          CRM_EXPORT_BASE_URL: `${env.proxyUrl}/v1`,
          CRM_EXPORT_KEY: options.key,
          CRM_EXPORT_STATE_DIR: stateDir,
          CRM_EXPORT_COPY: copyPath,
          CRM_EXPORT_TORTURE_HISTORY: history.name,
          CRM_EXPORT_TORTURE_RUN: String(run),
        },
        options.runTimeoutMs ?? 120_000,
      );
      env.setScript({ plan: { next: () => null } });
      runs.push({ run, exitCode: outcome.exitCode, timedOut: outcome.timedOut, ms: outcome.ms });
      if (outcome.timedOut)
        failures.push(`run ${run} did not end within ${Math.round((options.runTimeoutMs ?? 120_000) / 1000)} s`);
      else if (outcome.exitCode !== 0) failures.push(`run ${run} exited with ${outcome.exitCode ?? 'a signal'}`);
      if (failures.length > 0) {
        stderrTail = outcome.stderr;
        break;
      }
    }
    let compared = 0;
    let unjudged = 0;
    if (failures.length === 0) {
      for (const reason of unfolding.incomplete()) failures.push(`the history did not happen: ${reason}`);
      const want = new Map(expected);
      for (const o of unfolding.overrides()) want.set(recordKey(o), o);
      const copy = readCopy(copyPath);
      failures.push(...copy.problems.slice(0, MAX_SHOWN));
      const result = compareCopy(want, copy.records, { leftTeams: new Set(unfolding.leftTeams()) });
      compared = result.compared;
      unjudged = result.unjudged;
      if (result.differences.length > 0) {
        failures.push(...result.differences.slice(0, MAX_SHOWN));
        if (result.differences.length > MAX_SHOWN)
          failures.push(`... and ${result.differences.length - MAX_SHOWN} more differences`);
      }
    }
    const injected: Record<string, number> = {};
    for (const [k, n] of Object.entries(env.proxy.injected)) {
      const d = (n ?? 0) - (before[k] ?? 0);
      if (d > 0) injected[k] = d;
    }
    const verdict: HistoryVerdict = {
      history: history.name,
      pass: failures.length === 0,
      failures,
      runs,
      compared,
      unjudged,
      injected,
    };
    if (stderrTail) verdict.stderrTail = stderrTail;
    if (options.keepState) verdict.stateDir = stateDir;
    return verdict;
  } finally {
    process.off('exit', removeState);
    removeState();
  }
}

/** Waits until the newest record the lists serve is older than the feed's hold-back, so the feed has it too. */
async function settle(expected: ReadonlyMap<string, CopyRecord>, holdBackMs: number): Promise<void> {
  let newest = 0;
  for (const r of expected.values()) {
    const t = Date.parse(String(r.record.updated_at));
    if (Number.isFinite(t) && t > newest) newest = t;
  }
  const wait = newest + holdBackMs + 250 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

function runConsumer(
  command: string,
  vars: Record<string, string>,
  timeoutMs: number,
): Promise<{ exitCode: number | null; timedOut: boolean; ms: number; stderr: string }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, {
      shell: true,
      detached: process.platform !== 'win32',
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...vars },
    });
    trackGroup(child);
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-2000);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      stop(child.pid);
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ exitCode: code, timedOut, ms: Date.now() - started, stderr });
    });
  });
}

/** Stops the consumer and whatever its shell started (its own process group). */
function stop(pid: number | undefined): void {
  if (pid !== undefined) signalGroup(pid, 'SIGKILL');
}
