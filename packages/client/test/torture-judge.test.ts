// The torture kit's judgement without a service: requests and pages as the proxy saw them (a clock the
// test moves), and what the checks say about them, each naming the contract rule.
import { describe, expect, it } from 'vitest';
import type { Fault, FaultRequest } from '../src/fault-proxy/fault-plan.js';
import { type CopyRecord, compareCopy, recordKey } from '../src/torture/copy.js';
import { judgeExact, judgeMoment } from '../src/torture/judge-copy.js';
import { judgeState, judgeTiming } from '../src/torture/judge-traffic.js';
import { Ledger, type RunRecord } from '../src/torture/ledger.js';
import { RULES } from '../src/torture/rules.js';
import { Traffic } from '../src/torture/traffic.js';

type Item = { kind: string; id: string; version: number; removed?: boolean; lead?: string };

/** A history written as requests at given times. */
function traffic() {
  let now = 0;
  const t = new Traffic(() => now);
  let cursors = 0;
  const send = (ms: number, o: { team?: string; path?: string; cursor?: string | null; fault?: Fault }) => {
    now = ms;
    const query = o.cursor ? `?limit=100&cursor=${o.cursor}` : '?limit=100';
    const r: FaultRequest = { method: 'GET', path: o.path ?? '/v1/sync/changes', query };
    if (o.team) r.team = o.team;
    t.arrive(r);
    t.faulted(r, o.fault ?? null);
    return r;
  };
  return {
    t,
    run: (run: number, copyOnly = false) => t.startRun(run, copyOnly),
    /** A request answered at once with `fault`: a team's feed request, or `/teams`. */
    fault: (ms: number, fault: Fault, team: string | null = 'team_a', cursor: string | null = null) =>
      send(ms, { fault, ...(team ? { team } : { path: '/v1/teams' }), cursor }),
    /** A feed page; returns its next_cursor. */
    page(ms: number, team: string, cursor: string | null, items: Item[], hasMore: boolean): string {
      const r = send(ms, { team, cursor });
      const next = `c${++cursors}`;
      const data = items.map((i) => ({
        kind: i.kind,
        id: i.id,
        version: i.version,
        ...(i.removed ? { removed: { reason: 'erased' } } : { object: { id: i.id, version: i.version, lead: i.lead } }),
      }));
      t.answered(r, Buffer.from(JSON.stringify({ data, has_more: hasMore, next_cursor: next })));
      return next;
    },
    teams(ms: number, listed: string[]) {
      const r = send(ms, { path: '/v1/teams' });
      t.answered(r, Buffer.from(JSON.stringify({ data: listed.map((id) => ({ id })) })));
    },
  };
}

const rec = (kind: string, id: string, version: number, team = 'team_a'): CopyRecord => ({
  team,
  kind,
  id,
  version,
  record: { id, version },
});
const lists = (...rs: CopyRecord[]) => new Map(rs.map((r) => [recordKey(r), r]));
const runs = (...rs: [number, boolean, string?][]): RunRecord[] =>
  rs.map(([run, completed, killed]) => ({ run, completed, killed: killed ?? null }));
const none = { leftTeams: new Set<string>(), overridden: new Set<string>() };

describe('torture kit: timing', () => {
  it('after a 429 the same team’s next request comes no sooner than Retry-After; other teams are not held', () => {
    const h = traffic();
    h.run(1);
    h.fault(0, { kind: 'rate_limited', retryAfter: 1 });
    h.page(5, 'team_b', null, [], false);
    h.page(400, 'team_a', null, [], false);
    expect(judgeTiming(h.t.exchanges)).toEqual([
      `team_a's feed request 2 of run 1 came 0.40 s after 429 rate_limited (Retry-After: 1) answered to team_a's feed request 1 of run 1; at least 1.00 s — ${RULES.retryAfter}`,
    ]);
    const kept = traffic();
    kept.run(1);
    kept.fault(0, { kind: 'quota_exceeded', retryAfter: 1 });
    kept.page(1000, 'team_a', null, [], false);
    expect(judgeTiming(kept.t.exchanges)).toEqual([]);
  });

  it('a bare 429, a 5xx without Retry-After and a lost connection call for a backoff; a 5xx with Retry-After for that long', () => {
    const faults: [Fault, number, string | null][] = [
      [{ kind: 'firewall_429' }, 5, RULES.backoff],
      [{ kind: 'internal_error' }, 5, RULES.backoff],
      [{ kind: 'cut_connection' }, 5, RULES.backoff],
      [{ kind: 'service_unavailable' }, 150, null],
      [{ kind: 'service_unavailable', retryAfter: 2 }, 1500, RULES.retryAfter],
      [{ kind: 'internal_error', retryAfter: 2 }, 2000, null],
    ];
    for (const [fault, gap, rule] of faults) {
      const h = traffic();
      h.run(1);
      h.fault(0, fault, null);
      h.teams(gap, ['team_a']);
      const found = judgeTiming(h.t.exchanges);
      expect(found, fault.kind).toHaveLength(rule ? 1 : 0);
      if (rule)
        expect([found[0]?.startsWith('/teams request 2 of run 1 came '), found[0]?.endsWith(` — ${rule}`)]).toEqual([
          true,
          true,
        ]);
    }
  });

  it('no feed request of a team within a minute of its page with has_more false, nor of its 409 capture_not_ready', () => {
    const h = traffic();
    h.run(1);
    const c = h.page(0, 'team_a', null, [], false);
    h.page(300, 'team_a', c, [], false);
    h.fault(0, { kind: 'capture_not_ready' }, 'team_b');
    h.page(59_000, 'team_b', null, [], false);
    const found = judgeTiming(h.t.exchanges);
    expect(found).toHaveLength(2);
    expect(found[0]).toBe(
      `team_a's feed request 2 of run 1 came 0.30 s after its page with has_more false (team_a's feed request 1 of run 1) — ${RULES.pollWait}`,
    );
    expect(found[1]).toContain(
      `after its 409 capture_not_ready (team_b's feed request 1 of run 1) — ${RULES.notReady}`,
    );
  });
});

describe('torture kit: the consumer’s state and /teams', () => {
  it('a run that reads the feed from the start after the last one caught the team up keeps no state', () => {
    const h = traffic();
    h.run(1);
    const c = h.page(0, 'team_a', null, [], false);
    h.run(2);
    h.page(10, 'team_a', null, [], false);
    h.run(3);
    h.page(20, 'team_a', c, [], false);
    expect(judgeState(h.t.exchanges, runs([1, true], [2, true], [3, true]))).toEqual([
      `team_a's feed request 1 of run 2 read the feed from the start although team_a's feed request 1 of run 1 had caught the team up — ${RULES.keepState}`,
    ]);
  });

  it('after capture_not_ready the next feed request carries the cursor: reading from the start is a resync', () => {
    const h = traffic();
    h.run(1);
    const c = h.page(0, 'team_a', null, [], true);
    h.fault(10, { kind: 'capture_not_ready' }, 'team_a', c);
    h.run(2);
    h.page(20, 'team_a', null, [], false);
    expect(judgeState(h.t.exchanges, runs([1, true], [2, true]))).toEqual([
      `team_a's feed request 1 of run 2 read the feed from the start after the 409 capture_not_ready of team_a's feed request 2 of run 1 — ${RULES.notReady}`,
    ]);
  });

  it('after a 404 team_not_accessible the consumer reads /teams before it asks for the team again', () => {
    const read = traffic();
    read.run(1);
    read.fault(0, { kind: 'team_not_accessible' });
    read.teams(5, ['team_a']);
    expect(judgeState(read.t.exchanges, runs([1, true]))).toEqual([]);
    const blind = traffic();
    blind.run(1);
    blind.fault(0, { kind: 'team_not_accessible' });
    expect(judgeState(blind.t.exchanges, runs([1, true]))).toEqual([
      `team_a: run 1 never read /teams after the 404 of team_a's feed request 1 of run 1 — ${RULES.teamGone}`,
    ]);
  });

  it('a copy-only run sends nothing', () => {
    const h = traffic();
    h.run(1, true);
    h.teams(0, ['team_a']);
    expect(judgeState(h.t.exchanges, runs([1, false, 'at once']))).toEqual([
      `the copy-only run after run 1 sent 1 request(s) — ${RULES.copyOnly}`,
    ]);
  });
});

describe('torture kit: the copy between runs and after the last', () => {
  it('what the consumer went past stays held, at no lower version; a removal it went past is not held', () => {
    const h = traffic();
    h.run(1);
    const c = h.page(
      0,
      'team_a',
      null,
      [
        { kind: 'call', id: 'call_1', version: 2 },
        { kind: 'call', id: 'call_2', version: 1 },
        { kind: 'call', id: 'call_3', version: 1 },
      ],
      true,
    );
    h.page(10, 'team_a', c, [{ kind: 'call', id: 'call_3', version: 2, removed: true }], false);
    const ledger = new Ledger(h.t.exchanges, runs([1, true]));
    const now = lists(rec('call', 'call_1', 2), rec('call', 'call_2', 1));
    const copy = [rec('call', 'call_1', 1), rec('call', 'call_3', 1)];
    expect(judgeMoment('after run 1', copy, now, ledger, none)).toEqual([
      `after run 1: team_a/call/call_1: holds v1 — ${RULES.higherVersion} — v2 was delivered in team_a's feed request 1 of run 1`,
      `after run 1: team_a/call/call_2: missing (lists: v1) — ${RULES.storeDelivered} — v1 was delivered in team_a's feed request 1 of run 1`,
      `after run 1: team_a/call/call_3: held at v1 — ${RULES.removal} — its removal (v2) was delivered in team_a's feed request 2 of run 1`,
    ]);
  });

  it('a facet or activity of a removed lead must be gone; a page the consumer never went past is not judged', () => {
    const h = traffic();
    h.run(1);
    const c = h.page(
      0,
      'team_a',
      null,
      [
        { kind: 'lead_attribution', id: 'lead_1', version: 1, lead: 'lead_1' },
        { kind: 'activity', id: 'act_1', version: 1, lead: 'lead_1' },
      ],
      true,
    );
    h.page(10, 'team_a', c, [{ kind: 'lead', id: 'lead_1', version: 3, removed: true }], true);
    const ledger = new Ledger(h.t.exchanges, runs([1, false, 'mid-page']));
    // The removal's page was never acknowledged (killed, no later request): not judged yet.
    expect(judgeMoment('after run 1', [rec('activity', 'act_1', 1)], lists(), ledger, none)).toEqual([]);
    const done = new Ledger(h.t.exchanges, runs([1, true]));
    expect(judgeMoment('after run 1', [rec('activity', 'act_1', 1)], lists(), done, none)).toEqual([
      `after run 1: team_a/activity/act_1: held at v1 — ${RULES.removedLead} — the lead lead_1’s removal (v3) was delivered in team_a's feed request 2 of run 1`,
    ]);
  });

  it('a record lost from the page a killed run held, when the next run asked for the page after it, breaks rule 3', () => {
    const h = traffic();
    h.run(1);
    const c = h.page(0, 'team_a', null, [{ kind: 'call', id: 'call_1', version: 1 }], true);
    h.run(2);
    h.page(10, 'team_a', c, [], false);
    const ledger = new Ledger(h.t.exchanges, runs([1, false, 'mid-page'], [2, true]));
    const found = judgeExact('after run 2', compareCopy(lists(rec('call', 'call_1', 1)), []).found, ledger, none);
    expect(found).toEqual([
      `after run 2: team_a/call/call_1: missing (lists: v1) — ${RULES.cursorAfterPage} — v1 was delivered in team_a's feed request 1 of run 1; the consumer was killed while it held that page, and team_a's feed request 1 of run 2 asked for the page after it`,
    ]);
  });

  it('a resync forgives lower versions and the records it sweeps, never the records it keeps', () => {
    const h = traffic();
    h.run(1);
    const c = h.page(
      0,
      'team_a',
      null,
      [
        { kind: 'call', id: 'call_1', version: 1001 },
        { kind: 'call', id: 'call_2', version: 1 },
      ],
      false,
    );
    h.fault(10, { kind: 'resync_required' }, 'team_a', c);
    const ledger = new Ledger(h.t.exchanges, runs([1, true]));
    const now = lists(rec('call', 'call_1', 1), rec('call', 'call_2', 1));
    expect(judgeMoment('after run 1', [rec('call', 'call_1', 1)], now, ledger, none)).toEqual([
      `after run 1: team_a/call/call_2: missing (lists: v1) — ${RULES.resyncKeeps} — v1 was delivered in team_a's feed request 1 of run 1; a resync began with the answer to team_a's feed request 2 of run 1`,
    ]);
  });

  it('after the last run each difference names its rule: never delivered, an older version delivered again', () => {
    const h = traffic();
    h.run(1);
    const c = h.page(0, 'team_a', null, [{ kind: 'call', id: 'call_1', version: 2 }], true);
    h.page(10, 'team_a', c, [{ kind: 'call', id: 'call_1', version: 1 }], true);
    const ledger = new Ledger(h.t.exchanges, runs([1, true]));
    const want = lists(rec('call', 'call_1', 2), rec('call', 'call_9', 1));
    const found = judgeExact('after run 1', compareCopy(want, [rec('call', 'call_1', 1)]).found, ledger, none);
    expect(found).toEqual([
      `after run 1: team_a/call/call_1: holds v1, lists: v2 — ${RULES.higherVersion} — v2 was delivered in team_a's feed request 1 of run 1; v1 came again in team_a's feed request 2 of run 1`,
      `after run 1: team_a/call/call_9: missing (lists: v1) — ${RULES.askAgain} — never delivered: the last feed answer the consumer got for the team, to team_a's feed request 2 of run 1, said has_more true`,
    ]);
  });
});
