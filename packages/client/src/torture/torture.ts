// The torture kit: runs a consumer command through each scripted history behind the fault proxy, then
// judges the consumer's requests and its copy against the lists, read from the service directly.
import { fileURLToPath } from 'node:url';
import { CrmExportClient } from '../client/crm-export-client.js';
import type { FaultRequest } from '../fault-proxy/fault-plan.js';
import { startFaultProxy } from '../fault-proxy/fault-proxy.js';
import type { CopyRecord } from './copy.js';
import type { ServiceWriter } from './demo-service.js';
import { HISTORIES, type History } from './histories.js';
import { type HistoryVerdict, Lists, type ProxyScript, runHistory } from './run-history.js';

export type { RunOutcome } from './consumer-run.js';
export type { HistoryVerdict } from './run-history.js';

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
  /** Changes the service while the consumer reads; without it the histories that need it are skipped. */
  service?: ServiceWriter;
  /** Progress lines (one per history started). */
  log?: (line: string) => void;
}

export interface TortureResult {
  pass: boolean;
  teams: string[];
  records: number;
  verdicts: HistoryVerdict[];
}

/**
 * The reference consumer (`crm-export-sync sync --once` into SQLite, then `mirror export`) as a consumer
 * command. The copy is exported whatever sync's exit status, which the run keeps (1: a team stayed
 * refused); a copy-only run exports only.
 */
export function referenceConsumerCommand(): string {
  const bin = fileURLToPath(new URL('../../bin/crm-export-sync.js', import.meta.url));
  const node = JSON.stringify(process.execPath);
  const sync = `${node} ${JSON.stringify(bin)}`;
  const into = '"sqlite:$CRM_EXPORT_STATE_DIR/mirror.db"';
  const exportCopy = `${sync} mirror export --into ${into} --out "$CRM_EXPORT_COPY"`;
  const syncOnce = `${sync} sync --once --base-url "$CRM_EXPORT_BASE_URL" --into ${into}`;
  return `if [ "$CRM_EXPORT_COPY_ONLY" = 1 ]; then ${exportCopy}; else ${syncOnce}; s=$?; ${exportCopy} || exit 1; exit $s; fi`;
}

export function selectHistories(names?: string[]): History[] {
  if (!names || names.length === 0) return HISTORIES;
  return names.map((n) => {
    const h = HISTORIES.find((x) => x.name === n);
    if (!h) throw new Error(`unknown history ${n} (known: ${HISTORIES.map((x) => x.name).join(', ')})`);
    return h;
  });
}

const IDLE: ProxyScript = { plan: { next: () => null }, rewrite: (_r, body) => body, before: async () => {} };

export async function runTorture(options: TortureOptions): Promise<TortureResult> {
  const histories = selectHistories(options.histories);
  const base = new URL(options.baseUrl.replace(/\/+$/, ''));
  if (base.protocol !== 'http:')
    throw new Error('the torture kit needs the service over plain http:// on this machine');
  const log = options.log ?? (() => {});
  const client = new CrmExportClient({ baseUrl: base.toString(), key: options.key });
  const teams = (await client.teams()).data.map((t) => t.id);
  if (teams.length === 0) throw new Error('the key reads no team');
  const lists = new Lists(client, teams);
  await lists.refresh();
  const records = lists.size;
  await settle(lists.of(teams), options.holdBackMs ?? 10_000);

  let current = IDLE;
  const proxy = await startFaultProxy({
    target: base.origin,
    plan: { next: (r: FaultRequest) => current.plan.next(r) },
    rewrite: (r, body) => current.rewrite(r, body),
    before: (r) => current.before(r),
  });
  const verdicts: HistoryVerdict[] = [];
  const skip = (history: History, reason: string, pass: boolean): HistoryVerdict => ({
    history: history.name,
    pass,
    ...(pass ? { skipped: reason } : {}),
    failures: pass ? [] : [reason],
    runs: [],
    compared: 0,
    unjudged: 0,
    injected: {},
  });
  try {
    for (const history of histories) {
      log(`history ${history.name}: ${history.summary}`);
      if (teams.length < history.minTeams) {
        const reason = `needs a key reading at least ${history.minTeams} teams; this one reads ${teams.length}`;
        verdicts.push(skip(history, reason, false));
        continue;
      }
      if (history.changesService && !options.service) {
        verdicts.push(
          skip(history, 'it changes the service while the consumer reads: run the kit with --start-service', true),
        );
        continue;
      }
      verdicts.push(
        await runHistory(history, {
          consumer: options.consumer,
          key: options.key,
          proxyUrl: proxy.url,
          runTimeoutMs: options.runTimeoutMs ?? 120_000,
          keepState: options.keepState ?? false,
          teams,
          lists,
          ...(options.service ? { service: options.service } : {}),
          injected: () => proxy.injected,
          setScript: (s) => {
            current = s;
          },
        }),
      );
      current = IDLE;
    }
  } finally {
    await proxy.close();
  }
  return { pass: verdicts.every((v) => v.pass), teams, records, verdicts };
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
