// One history from start to verdict: each run of the consumer behind the proxy with the history's script,
// the copy-only run after each kill, the copy judged after every run (exact where the history says so),
// then the timing and state of its requests.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CrmExportClient } from '../client/crm-export-client.js';
import type { FaultPlan, FaultRequest } from '../fault-proxy/fault-plan.js';
import { ConsumerRun, type RunOutcome, WritePace } from './consumer-run.js';
import { type CopyRecord, compareCopy, readCopy, readLists, recordKey } from './copy.js';
import type { ServiceWriter } from './demo-service.js';
import { type History, type HistoryContext, isTeams, type RunScript } from './history-tools.js';
import { judgeExact, judgeMoment } from './judge-copy.js';
import { describeFault, judgeState, judgeTiming } from './judge-traffic.js';
import { Ledger, type RunRecord } from './ledger.js';
import { RULES } from './rules.js';
import { describeExchange, type Exchange, Traffic } from './traffic.js';

/** What the proxy runs: a history's script wrapped so the kit records every request and answer. */
export interface ProxyScript {
  plan: FaultPlan;
  rewrite(request: FaultRequest, body: Buffer): Buffer;
  before(request: FaultRequest): Promise<void>;
}

export interface HistoryVerdict {
  history: string;
  pass: boolean;
  /** Why it was not run (it changes the service, and the kit cannot). */
  skipped?: string;
  /** Every reason it failed, each naming the rule, the record, the run and the request. */
  failures: string[];
  runs: RunOutcome[];
  /** Records of the lists compared after the last exact run. */
  compared: number;
  /** Copy lines of kinds the lists do not serve (kept unknown kinds: allowed). */
  unjudged: number;
  /** Faults the proxy injected, by kind. */
  injected: Record<string, number>;
  /** The consumer's last lines on stderr when it failed (its own logs). */
  stderrTail?: string;
  /** Everything the consumer wrote on stderr in every run, kept when the history failed. */
  stderrFile?: string;
  /** The state directory, when kept. */
  stateDir?: string;
}

/** The lists of every team the key reads, read again after each change of the service. */
export class Lists {
  private all = new Map<string, CopyRecord>();
  constructor(
    private readonly client: CrmExportClient,
    private readonly teams: string[],
  ) {}
  async refresh(): Promise<void> {
    this.all = await readLists(this.client, this.teams);
  }
  get size(): number {
    return this.all.size;
  }
  of(teams: readonly string[]): Map<string, CopyRecord> {
    return new Map([...this.all].filter(([, r]) => teams.includes(r.team)));
  }
}

export interface HistoryEnv {
  consumer: string;
  key: string;
  proxyUrl: string;
  runTimeoutMs: number;
  keepState: boolean;
  teams: string[];
  lists: Lists;
  service?: ServiceWriter;
  injected(): Partial<Record<string, number>>;
  setScript(s: ProxyScript): void;
}

const MAX_SHOWN = 5;
const COPY_ONLY_TIMEOUT_MS = 30_000;
const IDLE: RunScript = { plan: { next: () => null } };

/** The first few of a group of failures, and how many more there are. */
const shown = (all: string[]) =>
  all.length > MAX_SHOWN ? [...all.slice(0, MAX_SHOWN), `... and ${all.length - MAX_SHOWN} more like these`] : all;

function proxyScript(
  s: RunScript,
  traffic: Traffic,
  only: readonly string[] | null,
  consumer: ConsumerRun | null,
): ProxyScript {
  return {
    plan: {
      next(r) {
        const fault = s.plan.next(r);
        traffic.faulted(r, fault);
        return fault;
      },
    },
    rewrite(r, body) {
      let out = s.rewrite ? s.rewrite(r, body) : body;
      if (only && isTeams(r)) {
        const list = JSON.parse(out.toString('utf8')) as { data: { id: string }[] };
        list.data = list.data.filter((t) => only.includes(t.id));
        out = Buffer.from(JSON.stringify(list));
      }
      const page = traffic.answered(r, out).page;
      if (page) consumer?.delivered(page.items.length);
      return out;
    },
    async before(r) {
      traffic.arrive(r);
      await consumer?.requested();
      await s.before?.(r);
    },
  };
}

/** "run 1 exited with 1 after 500 internal_error answered to team_x's feed request 2 of run 1 — rule". */
function exitFailure(run: number, code: number | null, exchanges: readonly Exchange[]): string {
  const base = `run ${run} exited with ${code ?? 'a signal'}`;
  const last = exchanges.filter((e) => e.run === run && !e.copyOnly && e.fault).at(-1);
  if (!last?.fault) return base;
  const kind = last.fault.kind;
  const rule =
    kind === 'rate_limited' || kind === 'quota_exceeded'
      ? RULES.retryAfter
      : kind === 'sync_cursor_expired' || kind === 'resync_required'
        ? RULES.resync
        : kind === 'capture_not_ready'
          ? RULES.notReady
          : kind === 'team_not_accessible'
            ? RULES.teamGone
            : RULES.passing;
  return `${base} after ${describeFault(last.fault)} answered to ${describeExchange(last)} — ${rule}`;
}

export async function runHistory(history: History, env: HistoryEnv): Promise<HistoryVerdict> {
  const dir = mkdtempSync(join(tmpdir(), `crm-torture-${history.name}-`));
  const stateDir = join(dir, 'state');
  mkdirSync(stateDir);
  const copyPath = join(dir, 'copy.ndjson');
  const stderrFile = join(dir, 'stderr.log');
  // A kit stopped by a signal exits at once: the history's files go with it (unless kept).
  const removeAll = () => {
    if (!env.keepState) rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', removeAll);
  const before = { ...env.injected() };
  const teams = history.firstTeamOnly ? env.teams.slice(0, 1) : env.teams;
  const service = env.service;
  const ctx: HistoryContext = {
    teams,
    get expected() {
      return env.lists.of(teams);
    },
    async change(events) {
      if (!service) throw new Error(`${history.name} changes the service, and the kit has no way to`);
      if (events.length > 0) await service.ingest(events);
      await env.lists.refresh();
    },
  };
  const traffic = new Traffic();
  const pace = new WritePace();
  const unfolding = history.start(ctx);
  const runs: RunOutcome[] = [];
  const records: RunRecord[] = [];
  const fatal: string[] = [];
  const judged: string[][] = [];
  let stderrTail = '';
  let compared = 0;
  let unjudged = 0;
  const vars = (run: number, copyOnly: boolean): Record<string, string> => ({
    CRM_EXPORT_BASE_URL: `${env.proxyUrl}/v1`,
    CRM_EXPORT_KEY: env.key,
    CRM_EXPORT_STATE_DIR: stateDir,
    CRM_EXPORT_COPY: copyPath,
    CRM_EXPORT_TORTURE_HISTORY: history.name,
    CRM_EXPORT_TORTURE_RUN: String(run),
    ...(copyOnly ? { CRM_EXPORT_COPY_ONLY: '1' } : {}),
  });
  const overrides = () => unfolding.overrides();
  const j = () => ({
    leftTeams: new Set(unfolding.leftTeams()),
    overridden: new Set(overrides().map(recordKey)),
  });
  try {
    for (let run = 1; run <= history.runs; run++) {
      const consumer = new ConsumerRun(stateDir, stderrFile, pace);
      traffic.startRun(run, false);
      const only = history.firstTeamOnly ? teams : null;
      env.setScript(proxyScript(unfolding.script(run, consumer), traffic, only, consumer));
      rmSync(copyPath, { force: true });
      const out = await consumer.run(env.consumer, vars(run, false), env.runTimeoutMs, `run ${run}`);
      env.setScript(proxyScript(IDLE, traffic, null, null));
      const killed = consumer.killed;
      runs.push({ run, exitCode: out.exitCode, timedOut: out.timedOut, ms: out.ms, ...(killed ? { killed } : {}) });
      records.push({ run, completed: killed === null && !out.timedOut, killed });
      if (out.timedOut) fatal.push(`run ${run} did not end within ${Math.round(env.runTimeoutMs / 1000)} s`);
      else if (killed === null && out.exitCode !== 0 && !(out.exitCode === 1 && history.mayEndRefused?.includes(run)))
        fatal.push(exitFailure(run, out.exitCode, traffic.exchanges));
      if (fatal.length > 0) {
        stderrTail = out.stderrTail;
        break;
      }
      if (killed !== null) {
        traffic.startRun(run, true);
        const copier = new ConsumerRun(stateDir, stderrFile);
        const c = await copier.run(
          env.consumer,
          vars(run, true),
          COPY_ONLY_TIMEOUT_MS,
          `copy-only run after run ${run}`,
        );
        if (c.timedOut || c.exitCode !== 0) {
          fatal.push(
            `the copy-only run after run ${run} ${c.timedOut ? 'did not end' : `exited with ${c.exitCode}`} — ${RULES.copyOnly}`,
          );
          stderrTail = c.stderrTail;
          break;
        }
      }
      const copy = readCopy(copyPath);
      if (copy.problems.length > 0) {
        fatal.push(...shown(copy.problems.map((p) => `after run ${run}: ${p}`)));
        break;
      }
      const label = killed === null ? `after run ${run}` : `after run ${run} (killed ${killed})`;
      const ledger = new Ledger(traffic.exchanges, records);
      if ((history.exactAfter ?? [history.runs]).includes(run)) {
        const want = env.lists.of(teams);
        for (const o of overrides()) want.set(recordKey(o), o);
        const result = compareCopy(want, copy.records, { leftTeams: j().leftTeams });
        compared = result.compared;
        unjudged = result.unjudged;
        judged.push(shown(judgeExact(label, result.found, ledger, j())));
      } else judged.push(shown(judgeMoment(label, copy.records, env.lists.of(teams), ledger, j())));
      if (unfolding.after) await unfolding.after(run);
    }
    const failures = [...fatal];
    if (fatal.length === 0) {
      const missedKills = (history.kills ?? []).filter((k) => !records.some((r) => r.run === k && r.killed !== null));
      failures.push(
        ...unfolding.incomplete().map((reason) => `the history did not happen: ${reason}`),
        ...missedKills.map((k) => `the history did not happen: run ${k} ended before the kit could kill it`),
        ...shown(judgeTiming(traffic.exchanges)),
        ...shown(judgeState(traffic.exchanges, records)),
        ...judged.flat(),
      );
    }
    const injected: Record<string, number> = {};
    for (const [k, n] of Object.entries(env.injected())) {
      const d = (n ?? 0) - (before[k] ?? 0);
      if (d > 0) injected[k] = d;
    }
    const pass = failures.length === 0;
    const verdict: HistoryVerdict = { history: history.name, pass, failures, runs, compared, unjudged, injected };
    if (stderrTail) verdict.stderrTail = stderrTail;
    if (!pass) verdict.stderrFile = stderrFile;
    if (env.keepState) verdict.stateDir = stateDir;
    // A failed history keeps the consumer's standard error for its engineer; its data goes.
    if (!pass && !env.keepState) {
      rmSync(stateDir, { recursive: true, force: true });
      rmSync(copyPath, { force: true });
    } else if (pass) removeAll();
    return verdict;
  } catch (err) {
    removeAll();
    throw err;
  } finally {
    process.off('exit', removeAll);
  }
}
