// What the consumer's requests say about it, whatever its copy holds: how long it waited after a 429,
// a 5xx or a lost connection, whether it asked again while caught up, whether a new run went on from
// the cursor the last one saved, what it did after capture_not_ready and a 404 for a team.
import type { Fault } from '../fault-proxy/fault-plan.js';
import type { RunRecord } from './ledger.js';
import { MIN_BACKOFF_MS, POLL_WAIT_MS, RULES, TIMING_SLACK_MS } from './rules.js';
import { describeExchange, type Exchange } from './traffic.js';

const seconds = (ms: number) => `${(Math.max(0, ms) / 1000).toFixed(2)} s`;

/** In words, the answer the kit made up: "429 rate_limited (Retry-After: 1)". */
export function describeFault(f: Fault): string {
  const ra = f.retryAfter === undefined ? '' : ` (Retry-After: ${f.retryAfter})`;
  switch (f.kind) {
    case 'rate_limited':
    case 'quota_exceeded':
      return `429 ${f.kind} (Retry-After: ${f.retryAfter ?? 1})`;
    case 'internal_error':
      return `500 internal_error${ra}`;
    case 'service_unavailable':
      return `503 service_unavailable${ra}`;
    case 'firewall_429':
      return 'the firewall’s bare 429';
    case 'sync_cursor_expired':
      return '410 sync_cursor_expired';
    case 'resync_required':
    case 'capture_not_ready':
      return `409 ${f.kind}`;
    case 'team_not_accessible':
      return '404 team_not_accessible';
    case 'cut_connection':
      return 'a connection closed before the answer';
    case 'cut_mid_body':
      return 'a connection reset in the middle of the body';
    case 'duplicate_page':
      return 'the previous page served again';
    default:
      return f.kind;
  }
}

/** The shortest wait before the same stream's next request that `f` calls for, and the rule behind it. */
function waitAfter(f: Fault): { ms: number; rule: string } | null {
  if (f.kind === 'rate_limited' || f.kind === 'quota_exceeded')
    return { ms: (f.retryAfter ?? 1) * 1000, rule: RULES.retryAfter };
  if (f.kind === 'internal_error' || f.kind === 'service_unavailable')
    return f.retryAfter === undefined
      ? { ms: MIN_BACKOFF_MS, rule: RULES.backoff }
      : { ms: f.retryAfter * 1000, rule: RULES.retryAfter };
  if (['firewall_429', 'cut_connection', 'cut_mid_body', 'drop_response'].includes(f.kind))
    return { ms: MIN_BACKOFF_MS, rule: RULES.backoff };
  return null;
}

/** The requests of each run, in order, by stream: one team's, or those that name no team. */
function streams(exchanges: readonly Exchange[]): Exchange[][] {
  const by = new Map<string, Exchange[]>();
  for (const e of exchanges) {
    if (e.copyOnly) continue;
    const k = `${e.run}\u0000${e.team ?? ''}`;
    const list = by.get(k) ?? [];
    list.push(e);
    by.set(k, list);
  }
  return [...by.values()];
}

/** Waits after 429, 5xx and lost connections; no feed request of a caught-up or not-ready team within the wait. */
export function judgeTiming(exchanges: readonly Exchange[]): string[] {
  const out: string[] = [];
  for (const stream of streams(exchanges)) {
    stream.forEach((e, i) => {
      const next = stream[i + 1];
      const wait = e.fault ? waitAfter(e.fault) : null;
      if (!next || !wait || e.answeredAt === null) return;
      const gap = next.at - e.answeredAt;
      if (gap < wait.ms - TIMING_SLACK_MS)
        out.push(
          `${describeExchange(next)} came ${seconds(gap)} after ${describeFault(e.fault as Fault)} answered to ${describeExchange(e)}; at least ${seconds(wait.ms)} — ${wait.rule}`,
        );
    });
    // Once caught up (or told the team is not ready), the team's feed waits a minute.
    const feed = stream.filter((e) => e.route === 'feed');
    for (const e of feed) {
      const notReady = e.fault?.kind === 'capture_not_ready';
      if ((!e.page || e.page.hasMore) && !notReady) continue;
      const early = feed.find((x) => x.seq > e.seq && e.answeredAt !== null && x.at - e.answeredAt < POLL_WAIT_MS);
      if (!early) continue;
      const what = notReady ? 'its 409 capture_not_ready' : 'its page with has_more false';
      out.push(
        `${describeExchange(early)} came ${seconds(early.at - (e.answeredAt as number))} after ${what} (${describeExchange(e)}) — ${notReady ? RULES.notReady : RULES.pollWait}`,
      );
      break;
    }
  }
  return out;
}

/**
 * The consumer's use of its state and of /teams: a run goes on from the cursor of a team the last run
 * caught up; capture_not_ready is never answered by reading the feed from the start; a 404 for a team is
 * followed by /teams before the team is asked for again; a copy-only run sends nothing.
 */
export function judgeState(exchanges: readonly Exchange[], runs: readonly RunRecord[]): string[] {
  const out: string[] = [];
  const sync = exchanges.filter((e) => !e.copyOnly);
  const feed = sync.filter((e) => e.route === 'feed' && e.team !== null);
  for (const e of feed) {
    const before = feed.filter((x) => x.team === e.team && x.seq < e.seq && (x.page || x.fault));
    const last = before.at(-1);
    const firstOfRun = !feed.some((x) => x.team === e.team && x.run === e.run && x.seq < e.seq);
    if (firstOfRun && last && last.run < e.run && last.page && !last.page.hasMore && e.cursor === null)
      out.push(
        `${describeExchange(e)} read the feed from the start although ${describeExchange(last)} had caught the team up — ${RULES.keepState}`,
      );
    if (last?.fault?.kind === 'capture_not_ready' && e.cursor === null && last.cursor !== null)
      out.push(
        `${describeExchange(e)} read the feed from the start after the 409 capture_not_ready of ${describeExchange(last)} — ${RULES.notReady}`,
      );
  }
  const completed = new Set(runs.filter((r) => r.completed).map((r) => r.run));
  for (const e of sync) {
    if (e.fault?.kind !== 'team_not_accessible' || e.team === null) continue;
    const later = sync.filter((x) => x.run === e.run && x.seq > e.seq);
    const teams = later.find((x) => x.route === 'teams');
    const again = later.find((x) => x.team === e.team && x.route !== 'teams');
    if (again && (!teams || again.seq < teams.seq))
      out.push(
        `${describeExchange(again)} asked for the team again after the 404 of ${describeExchange(e)} without reading /teams — ${RULES.teamGone}`,
      );
    else if (!teams && completed.has(e.run))
      out.push(`${e.team}: run ${e.run} never read /teams after the 404 of ${describeExchange(e)} — ${RULES.teamGone}`);
  }
  const copyOnly = exchanges.filter((e) => e.copyOnly);
  for (const run of new Set(copyOnly.map((e) => e.run)))
    out.push(
      `the copy-only run after run ${run} sent ${copyOnly.filter((e) => e.run === run).length} request(s) — ${RULES.copyOnly}`,
    );
  return out;
}
