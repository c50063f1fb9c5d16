// What the consumer was told during a history, record by record: every item it received, whether it
// went past the page that carried it (acknowledged it), and the answers that change what it must hold.
import { recordKey } from './copy.js';
import { type DeliveredItem, describeExchange, type Exchange } from './traffic.js';

/** How one run of the consumer ended. */
export interface RunRecord {
  run: number;
  /** It ended by itself (not killed by the kit, not stopped at the time limit). */
  completed: boolean;
  /** Why the kit killed it, when it did. */
  killed: string | null;
}

export interface Delivery {
  key: string;
  team: string;
  item: DeliveredItem;
  /** The exchange whose page carried it. */
  e: Exchange;
  /** The request that carried the page's next_cursor, 'run-end' when its run ended by itself, or null. */
  acked: Exchange | 'run-end' | null;
}

const RESYNC = new Set(['sync_cursor_expired', 'resync_required']);

export class Ledger {
  private readonly byKey = new Map<string, Delivery[]>();
  /** Per team: the seqs of answers that call for a resync, of capture_not_ready, of team_not_accessible. */
  private readonly marks = new Map<string, { resync: number[]; notReady: number[]; gone: number[] }>();
  /** `team/lead` -> the earliest acknowledged removal of the lead. */
  private readonly leadRemovals = new Map<string, Delivery>();
  /** Runs the kit killed. */
  readonly killed: ReadonlySet<number>;

  constructor(
    readonly exchanges: readonly Exchange[],
    runs: readonly RunRecord[],
  ) {
    const completed = new Set(runs.filter((r) => r.completed).map((r) => r.run));
    this.killed = new Set(runs.filter((r) => r.killed !== null).map((r) => r.run));
    const feed = exchanges.filter((e) => e.route === 'feed' && e.team !== null && !e.copyOnly);
    for (const e of feed) {
      const team = e.team as string;
      const m = this.marksOf(team);
      if (e.fault && RESYNC.has(e.fault.kind)) m.resync.push(e.seq);
      if (e.fault?.kind === 'capture_not_ready') m.notReady.push(e.seq);
      if (e.fault?.kind === 'team_not_accessible') m.gone.push(e.seq);
      if (!e.page) continue;
      const next = e.page.nextCursor;
      const later = next === null ? undefined : feed.find((x) => x.seq > e.seq && x.team === team && x.cursor === next);
      const acked = later ?? (completed.has(e.run) ? 'run-end' : null);
      for (const item of e.page.items) {
        const d: Delivery = { key: recordKey({ team, kind: item.kind, id: item.id }), team, item, e, acked };
        const list = this.byKey.get(d.key) ?? [];
        list.push(d);
        this.byKey.set(d.key, list);
        if (item.kind === 'lead' && item.removed && acked && !this.leadRemovals.has(`${team}/${item.id}`))
          this.leadRemovals.set(`${team}/${item.id}`, d);
      }
    }
  }

  keys(): IterableIterator<string> {
    return this.byKey.keys();
  }

  deliveries(key: string): Delivery[] {
    return this.byKey.get(key) ?? [];
  }

  private marksOf(team: string) {
    let m = this.marks.get(team);
    if (!m) {
      m = { resync: [], notReady: [], gone: [] };
      this.marks.set(team, m);
    }
    return m;
  }

  /** The first answer to `team` of `what` after `seq`. */
  after(team: string, what: 'resync' | 'notReady' | 'gone', seq: number): Exchange | undefined {
    const s = this.marksOf(team)[what].find((x) => x > seq);
    return s === undefined ? undefined : this.exchanges[s];
  }

  /** Any answer calling for a resync of `team`. */
  resynced(team: string): boolean {
    return this.marksOf(team).resync.length > 0;
  }

  /** The seq of the last answer calling for a resync of `team`, or -1. */
  lastResync(team: string): number {
    return this.marksOf(team).resync.at(-1) ?? -1;
  }

  /**
   * The acknowledged removal of the lead a facet or activity belongs to, unless a resync came after it
   * (a resync forgets tombstones).
   */
  removedLead(d: { team: string; item: DeliveredItem }): Delivery | undefined {
    if (d.item.lead === null || d.item.kind === 'lead') return undefined;
    const removal = this.leadRemovals.get(`${d.team}/${d.item.lead}`);
    if (!removal || this.after(d.team, 'resync', removal.e.seq)) return undefined;
    return removal;
  }

  /** The team's last feed exchange (of any run) that got a page or a made-up answer. */
  lastFeed(team: string): Exchange | undefined {
    for (let i = this.exchanges.length - 1; i >= 0; i--) {
      const e = this.exchanges[i] as Exchange;
      if (e.route === 'feed' && e.team === team && !e.copyOnly && (e.page || e.fault)) return e;
    }
    return undefined;
  }
}

/** "v3 was delivered in team_x's feed request 2 of run 1", "its removal (v4) was ...". */
export function describeDelivery(d: Delivery, whose = 'its'): string {
  const what = d.item.removed ? `${whose} removal (v${d.item.version})` : `v${d.item.version}`;
  return `${what} was delivered in ${describeExchange(d.e)}`;
}
