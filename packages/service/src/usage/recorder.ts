import type { Clock } from '../clock.js';
import type { Limits } from '../limits.js';
import type { LastUse, LastUseKind, RequestLogRow, Store, UsageCount } from '../store/store.js';
import { runCommand } from '../write/commands/commands.js';

// What each API process records of the requests it answers (docs/request-log.md): the request log, usage
// counts per integration, hour, route and reason, and the last use of each key, integration and operator
// token. Nothing is written on the request path: `record` only fills memory, and a timer writes it every
// `requestLogFlushMs` in one short transaction (`usage.append`). Counts add up over every process; last uses
// keep the newest; so `serve --workers` needs nothing more. The log's queue is bounded: when it is full an
// answered request is left out of the log (counted in `dropped`), and its usage count and last use are still
// kept. The API never waits for any of it.

/** One answered request, as the HTTP layer hands it over (http/usage-hook.ts). */
export interface Answered {
  /** Epoch ms the request arrived. */
  at: number;
  /** The authenticated integration, or null. */
  integration: string | null;
  /** The authenticated key's id, or null. */
  keyId: string | null;
  /** For a refused key: the lookup id it names, resolved to its integration at flush time (never stored). */
  presentedKey: string | null;
  requestId: string;
  method: string;
  route: string;
  status: number;
  /** The code answered (problem code or firewall refusal); null for a success. */
  code: string | null;
  /** Why it failed, for the usage counts ('' for a success; `locked_out` for a lockout's `rate_limited`). */
  reason: string;
  items: number;
  address: string;
}

/** What a recorder has done since it started (the management API shows it; docs/request-log.md). */
export interface RecorderStats {
  /** Whether recording is on (`REQUEST_LOG`). */
  enabled: boolean;
  /** Log entries waiting for the next flush. */
  queued: number;
  /** Log entries left out because the queue was full. */
  dropped: number;
  /** Flushes that wrote, and that failed (their rows are kept for the next one while room remains). */
  flushes: number;
  failedFlushes: number;
  /** Epoch ms of the last successful flush, or null. */
  lastFlushAt: number | null;
}

export interface RecorderOptions {
  store: Store;
  clock: Clock;
  limits: Pick<Limits, 'requestLogQueue' | 'requestLogFlushMs'>;
  /** Called when a log entry is dropped (metrics). */
  onDrop?: () => void;
  /** Called with a failed flush's error (logs); the next flush tries again. */
  onError?: (error: unknown) => void;
}

const HOUR_MS = 3_600_000;
/** Keys whose integration a flush has looked up, kept so a run of refusals costs one read. */
const RESOLVED_MAX = 10_000;
/** Distinct count rows held between flushes at most (integration x hour x route x reason). */
const COUNTS_MAX = 100_000;

/** hour -> owner -> route -> reason -> count. */
type CountTable = Map<number, Map<string, Map<string, Map<string, UsageCount>>>>;
/** kind -> id -> use. */
type UseTable = Map<LastUseKind, Map<string, LastUse>>;

/** The map under `key`, made when missing. */
function level<K, V extends Map<unknown, unknown>>(map: Map<K, V>, key: K): V {
  let found = map.get(key);
  if (found === undefined) {
    found = new Map() as V;
    map.set(key, found);
  }
  return found;
}

/** Adds `c` to its row of `table` (taking `c` itself as the row when there is none); true when it made a row. */
function addCount(table: CountTable, c: UsageCount): boolean {
  const reasons = level(level(level(table, c.hour), c.integration), c.route);
  const count = reasons.get(c.reason);
  if (!count) {
    reasons.set(c.reason, c);
    return true;
  }
  count.requests += c.requests;
  count.items += c.items;
  if (c.lastAt > count.lastAt) count.lastAt = c.lastAt;
  return false;
}

/** Every count of a table. */
function* countsOf(table: CountTable): Generator<UsageCount> {
  for (const owners of table.values())
    for (const routes of owners.values()) for (const reasons of routes.values()) yield* reasons.values();
}

export class UsageRecorder {
  private log: RequestLogRow[] = [];
  /** Rows whose integration is a presented key's, still to resolve: the row and the key it named. */
  private unresolved: { row: RequestLogRow; key: string }[] = [];
  /**
   * Counts by hour, owner, route and reason, in nested maps: each level's key is a string the request already
   * holds (the route template, the integration id), so a request builds no key of its own.
   */
  private counts: CountTable = new Map();
  /** Counts of refused keys, by key lookup id, resolved at flush time. */
  private keyCounts: CountTable = new Map();
  private countRows = 0;
  private uses: UseTable = new Map();
  private readonly resolved = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly state: Omit<RecorderStats, 'enabled' | 'queued'> = {
    dropped: 0,
    flushes: 0,
    failedFlushes: 0,
    lastFlushAt: null,
  };

  constructor(private readonly options: RecorderOptions) {}

  /** Starts the flush timer (unref'd: it never keeps a process alive). */
  start(): this {
    this.timer ??= setInterval(() => void this.flush(), this.options.limits.requestLogFlushMs);
    this.timer.unref();
    return this;
  }

  /** One answered request: memory only, never waits, never throws. */
  record(a: Answered): void {
    if (this.stopped) return;
    const integration = a.integration ?? '';
    if (this.log.length < this.options.limits.requestLogQueue) {
      const row: RequestLogRow = {
        at: a.at,
        integration,
        requestId: a.requestId,
        method: a.method,
        route: a.route,
        status: a.status,
        code: a.code,
        items: a.items,
        address: a.address,
      };
      this.log.push(row);
      if (a.integration === null && a.presentedKey !== null) this.unresolved.push({ row, key: a.presentedKey });
    } else {
      this.state.dropped++;
      this.options.onDrop?.();
    }
    const hour = a.at - (a.at % HOUR_MS);
    const byKey = a.integration === null && a.presentedKey !== null;
    const owner = byKey ? (a.presentedKey as string) : integration;
    const table = byKey ? this.keyCounts : this.counts;
    const reasons = level(level(level(table, hour), owner), a.route);
    const count = reasons.get(a.reason);
    if (count) {
      count.requests++;
      count.items += a.items;
      if (a.at > count.lastAt) count.lastAt = a.at;
    } else if (this.countRows < COUNTS_MAX) {
      this.countRows++;
      reasons.set(a.reason, {
        integration: owner,
        hour,
        route: a.route,
        reason: a.reason,
        requests: 1,
        items: a.items,
        lastAt: a.at,
      });
    }
    if (a.integration !== null) {
      this.use('integration', a.integration, a.at, a.address);
      if (a.keyId !== null) this.use('key', a.keyId, a.at, a.address);
    }
  }

  /** A use of a key, an integration or an operator token (by name), kept until the next flush. */
  recordUse(kind: LastUseKind, id: string, address: string): void {
    if (!this.stopped) this.use(kind, id, this.options.clock.now(), address);
  }

  private use(kind: LastUseKind, id: string, at: number, address: string): void {
    const ids = level(this.uses, kind);
    const use = ids.get(id);
    if (!use) ids.set(id, { kind, id, at, address });
    else if (at >= use.at) {
      use.at = at;
      use.address = address;
    }
  }

  stats(): RecorderStats {
    return { enabled: true, queued: this.log.length, ...this.state };
  }

  /** Writes what was recorded since the last flush; one flush at a time (a call during one waits for it). */
  flush(): Promise<void> {
    this.running ??= this.write().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Stops the timer and writes what remains; later records are ignored. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
    await this.flush();
    this.stopped = true;
  }

  private async write(): Promise<void> {
    const { log, unresolved, counts, keyCounts, uses } = this;
    if (log.length === 0 && counts.size === 0 && keyCounts.size === 0 && uses.size === 0) return;
    this.log = [];
    this.unresolved = [];
    this.counts = new Map();
    this.keyCounts = new Map();
    this.countRows = 0;
    this.uses = new Map();
    try {
      const keys = new Set(unresolved.map((u) => u.key));
      for (const c of countsOf(keyCounts)) keys.add(c.integration);
      const owners = await this.resolve([...keys]);
      for (const { row, key } of unresolved) row.integration = owners.get(key) ?? '';
      // A refused key's counts join its integration's (a copy: the table keeps them for a retry).
      const merged: UsageCount[] = [];
      const joined: CountTable = new Map();
      for (const c of countsOf(counts)) addCount(joined, { ...c });
      for (const c of countsOf(keyCounts)) addCount(joined, { ...c, integration: owners.get(c.integration) ?? '' });
      merged.push(...countsOf(joined));
      const lastUses: LastUse[] = [];
      for (const ids of uses.values()) lastUses.push(...ids.values());
      await runCommand(this.options.store, 'usage.append', { log, counts: merged, lastUses });
      this.state.flushes++;
      this.state.lastFlushAt = this.options.clock.now();
    } catch (error) {
      this.state.failedFlushes++;
      this.putBack(log, unresolved, counts, keyCounts, uses);
      this.options.onError?.(error);
    }
  }

  /** The integration of each presented key id (a key that does not exist: none). */
  private async resolve(ids: string[]): Promise<Map<string, string>> {
    const owners = new Map<string, string>();
    for (const id of ids) {
      let owner = this.resolved.get(id);
      if (owner === undefined) {
        const key = await this.options.store.getEntity('api_key', id);
        owner = key?.parent ?? '';
        if (this.resolved.size >= RESOLVED_MAX) this.resolved.clear();
        this.resolved.set(id, owner);
      }
      owners.set(id, owner);
    }
    return owners;
  }

  /** A failed flush's rows go back in front of what came since, as far as the queue's room allows. */
  private putBack(
    log: RequestLogRow[],
    unresolved: { row: RequestLogRow; key: string }[],
    counts: CountTable,
    keyCounts: CountTable,
    uses: UseTable,
  ): void {
    const room = Math.max(0, this.options.limits.requestLogQueue - this.log.length);
    const kept = log.slice(Math.max(0, log.length - room));
    this.state.dropped += log.length - kept.length;
    this.log = [...kept, ...this.log];
    const back = new Set(kept);
    this.unresolved = [...unresolved.filter((u) => back.has(u.row)), ...this.unresolved];
    for (const c of countsOf(counts)) if (addCount(this.counts, c)) this.countRows++;
    for (const c of countsOf(keyCounts)) if (addCount(this.keyCounts, c)) this.countRows++;
    for (const ids of uses.values()) for (const u of ids.values()) this.use(u.kind, u.id, u.at, u.address);
  }
}
