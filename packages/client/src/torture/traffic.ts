// Everything a consumer asked for during one history and what it was answered, as the torture kit's
// proxy saw it: the record the timing, state and copy checks read (judge.ts).
import type { Fault, FaultRequest } from '../fault-proxy/fault-plan.js';

/** One item of a feed page that reached the consumer. */
export interface DeliveredItem {
  kind: string;
  id: string;
  version: number;
  removed: boolean;
  /** The lead a facet or an activity belongs to. */
  lead: string | null;
}

export interface DeliveredPage {
  items: DeliveredItem[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** One request of the consumer and its answer. */
export interface Exchange {
  /** Order within the history. */
  seq: number;
  run: number;
  /** Made during a run that was told to write its copy only. */
  copyOnly: boolean;
  /** When it arrived (ms, monotonic). */
  at: number;
  team: string | null;
  route: 'feed' | 'teams' | 'other';
  /** The n-th request of its route and team in the run (1, 2, ...). */
  n: number;
  /** The feed cursor it carried. */
  cursor: string | null;
  /** The answer the kit made up instead of the service's, if any. */
  fault: Fault | null;
  /** When the answer went out (ms, monotonic); null while none did. */
  answeredAt: number | null;
  /** A feed page the consumer received whole. */
  page: DeliveredPage | null;
  /** The teams a `/teams` answer listed. */
  listed: string[] | null;
}

/** Faults answered at once, without the service. */
const ANSWERED_AT_ONCE = new Set([
  'rate_limited',
  'quota_exceeded',
  'internal_error',
  'service_unavailable',
  'firewall_429',
  'sync_cursor_expired',
  'resync_required',
  'capture_not_ready',
  'team_not_accessible',
  'cut_connection',
  'duplicate_page',
]);
/** Faults whose forwarded answer never reaches the consumer whole. */
const NOT_RECEIVED = new Set(['cut_mid_body', 'drop_response']);

const routeOf = (path: string): Exchange['route'] =>
  path.endsWith('/sync/changes') ? 'feed' : path.endsWith('/teams') ? 'teams' : 'other';

export class Traffic {
  readonly exchanges: Exchange[] = [];
  private readonly byRequest = new WeakMap<FaultRequest, Exchange>();
  private readonly counts = new Map<string, number>();
  private run = 0;
  private copyOnly = false;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Requests from here on belong to run `run` (numbered per route and team afresh). */
  startRun(run: number, copyOnly: boolean): void {
    this.run = run;
    this.copyOnly = copyOnly;
    this.counts.clear();
  }

  arrive(r: FaultRequest): Exchange {
    const known = this.byRequest.get(r);
    if (known) return known;
    const route = routeOf(r.path);
    const k = `${route}\u0000${r.team ?? ''}`;
    const n = (this.counts.get(k) ?? 0) + 1;
    this.counts.set(k, n);
    const cursor = route === 'feed' ? new URLSearchParams(r.query ?? '').get('cursor') : null;
    const e: Exchange = {
      seq: this.exchanges.length,
      run: this.run,
      copyOnly: this.copyOnly,
      at: this.now(),
      team: r.team ?? null,
      route,
      n,
      cursor,
      fault: null,
      answeredAt: null,
      page: null,
      listed: null,
    };
    this.exchanges.push(e);
    this.byRequest.set(r, e);
    return e;
  }

  /** The plan's answer for `r`. */
  faulted(r: FaultRequest, fault: Fault | null): void {
    const e = this.arrive(r);
    e.fault = fault;
    if (fault && ANSWERED_AT_ONCE.has(fault.kind)) e.answeredAt = this.now();
  }

  /** A successful answer of the service, as passed on (after any rewrite). */
  answered(r: FaultRequest, body: Buffer): Exchange {
    const e = this.arrive(r);
    e.answeredAt = this.now();
    if (e.fault && NOT_RECEIVED.has(e.fault.kind)) return e;
    try {
      if (e.route === 'feed') e.page = parsePage(body);
      else if (e.route === 'teams')
        e.listed = (JSON.parse(body.toString('utf8')) as { data: { id: string }[] }).data.map((t) => t.id);
    } catch {
      // Not JSON: nothing to learn from it.
    }
    return e;
  }
}

function parsePage(body: Buffer): DeliveredPage {
  const p = JSON.parse(body.toString('utf8')) as {
    data: { kind: string; id: string; version: number; removed?: unknown; object?: Record<string, unknown> }[];
    has_more: boolean;
    next_cursor: string | null;
  };
  const items = p.data.map((i) => {
    const lead =
      i.kind === 'lead_attribution' || i.kind === 'lead_response'
        ? i.id
        : i.kind === 'activity' && typeof i.object?.lead === 'string'
          ? i.object.lead
          : null;
    return { kind: i.kind, id: i.id, version: i.version, removed: Boolean(i.removed), lead };
  });
  return { items, hasMore: p.has_more, nextCursor: p.next_cursor };
}

/** "team_x's feed request 3 of run 2", "/teams request 1 of run 1". */
export function describeExchange(e: Exchange): string {
  const what = e.route === 'feed' ? 'feed request' : e.route === 'teams' ? '/teams request' : 'request';
  return `${e.team && e.route !== 'teams' ? `${e.team}'s ` : ''}${what} ${e.n} of run ${e.run}`;
}
