// What a history of the torture kit is, and the pieces the histories share: counting each team's
// requests, editing feed pages, made-up records.
import type { Fault, FaultPlan, FaultRequest } from '../fault-proxy/fault-plan.js';
import type { RunControl } from './consumer-run.js';
import { type CopyRecord, recordKey } from './copy.js';

export interface HistoryContext {
  /** Teams the consumer is shown (`/v1/teams`, read directly; the first alone with `firstTeamOnly`). */
  teams: string[];
  /** Every record of those teams the lists serve now, by `team/kind/id` (read again after every change). */
  readonly expected: ReadonlyMap<string, CopyRecord>;
  /** Applies CRM events (the service's NDJSON ingest format) to the service, then reads the lists again. */
  change(events: object[]): Promise<void>;
}

/** What the proxy does during one run of the consumer. */
export interface RunScript {
  plan: FaultPlan;
  rewrite?: (request: FaultRequest, body: Buffer) => Buffer;
  /** Awaited when a request arrives, before the plan: the history may change the service or kill the consumer. */
  before?: (request: FaultRequest) => Promise<void>;
}

/** One history as it unfolds: the script of each run and, afterwards, what the copy is judged against. */
export interface HistoryRun {
  script(run: number, control: RunControl): RunScript;
  /** Runs after run `run` ended and its copy was judged (a change of the service before the next run). */
  after?(run: number): Promise<void>;
  /** Records the copy must hold instead of the lists' (records the history changed on their way). */
  overrides(): CopyRecord[];
  /** Teams that left the key during the history. */
  leftTeams(): string[];
  /** Reasons the history did not happen as scripted (the consumer never made the requests it needs). */
  incomplete(): string[];
}

export interface History {
  name: string;
  /** What happens, in one line. */
  summary: string;
  /** Runs of the consumer (each resumes from the state the previous one left). */
  runs: number;
  /** Teams the key must read. */
  minTeams: number;
  /** The consumer is shown the key's first team only (`/teams` lists it alone); the others are not judged. */
  firstTeamOnly?: boolean;
  /** It changes the service while the consumer reads (needs `--start-service`). */
  changesService?: boolean;
  /** Runs the kit kills; after each, the consumer writes its copy in a run of its own (`CRM_EXPORT_COPY_ONLY`). */
  kills?: number[];
  /** Runs after which the copy must equal the lists (default: the last). */
  exactAfter?: number[];
  /** Runs that may end with exit status 1: a team the API still refused at their end. */
  mayEndRefused?: number[];
  start(ctx: HistoryContext): HistoryRun;
}

export interface FeedItem {
  kind: string;
  id: string;
  version: number;
  object?: Record<string, unknown>;
  removed?: unknown;
}
export interface FeedPage {
  data: FeedItem[];
  has_more: boolean;
  next_cursor: string;
  [field: string]: unknown;
}

export const FEED = '/sync/changes';
export const isFeed = (r: FaultRequest) => r.path.endsWith(FEED);
export const isTeams = (r: FaultRequest) => r.path.endsWith('/teams');
export const cursorOf = (r: FaultRequest) => new URLSearchParams(r.query ?? '').get('cursor');

export type Counter = ReturnType<typeof counter>;

/** Numbers each request per path and team (1, 2, ...), so a script can say "the team's second feed request". */
export function counter() {
  const counts = new Map<string, number>();
  const seen = new WeakMap<FaultRequest, number>();
  return {
    count(r: FaultRequest): number {
      const known = seen.get(r);
      if (known !== undefined) return known;
      const k = `${r.path}\u0000${r.team ?? ''}`;
      const n = (counts.get(k) ?? 0) + 1;
      counts.set(k, n);
      seen.set(r, n);
      return n;
    },
    /** Feed requests a team made so far. */
    feed(team: string): number {
      let n = 0;
      for (const [k, v] of counts) if (k.endsWith(`${FEED}\u0000${team}`)) n += v;
      return n;
    },
  };
}

export function readPage(body: Buffer): FeedPage {
  return JSON.parse(body.toString('utf8')) as FeedPage;
}

export function editPage(body: Buffer, edit: (page: FeedPage) => void): Buffer {
  const page = readPage(body);
  edit(page);
  return Buffer.from(JSON.stringify(page));
}

/** An item of the page that carries the version the lists serve (its record's latest), of one of `kinds`. */
export function latestItem(page: FeedPage, team: string, ctx: HistoryContext, kinds: string[]): FeedItem | undefined {
  for (const kind of kinds) {
    const item = page.data.find((i) => {
      const want = ctx.expected.get(recordKey({ team, kind: i.kind, id: i.id }));
      return i.kind === kind && i.object && want?.version === i.version;
    });
    if (item) return item;
  }
  return undefined;
}

export const GHOST_KINDS = ['call', 'conversation', 'booking', 'board'];

/**
 * A copy of a record of the page under a new id: a record the service no longer has (a restore took it
 * away, or its removal fell out of the feed), which only a full resync's sweep deletes.
 */
export function ghost(page: FeedPage, n: number): FeedItem | undefined {
  const model = page.data.find((i) => GHOST_KINDS.includes(i.kind) && i.object);
  if (!model?.object) return undefined;
  const id = `${model.id.split('_')[0]}_TortureGhost${n}`;
  return { kind: model.kind, id, version: 1, object: { ...model.object, id, version: 1 } };
}

export function noFaults(): FaultPlan {
  return { next: () => null };
}

/** Faults on each team's feed requests by their number, and on the first `/teams`. */
export function feedFaults(c: Counter, faults: Record<number, Fault>, teamsFault?: Fault): FaultPlan {
  return {
    next(r) {
      const n = c.count(r);
      if (isFeed(r)) return faults[n] ?? null;
      if (teamsFault && isTeams(r) && n === 1) return teamsFault;
      return null;
    },
  };
}

export const plain = (runs: {
  script: HistoryRun['script'];
  after?: HistoryRun['after'];
  incomplete?: () => string[];
}): HistoryRun => ({
  script: runs.script,
  ...(runs.after ? { after: runs.after } : {}),
  overrides: () => [],
  leftTeams: () => [],
  incomplete: runs.incomplete ?? (() => []),
});

/** Requires every team to have made at least `n` feed requests (the scripted fault was reached). */
export function reached(ctx: HistoryContext, c: Counter, n: number, what: string): string[] {
  return ctx.teams
    .filter((t) => c.feed(t) < n)
    .map((t) => `${t}: only ${c.feed(t)} feed request(s), ${what} needs ${n}`);
}

/** Letters and digits unique to this history's start, for ids the history creates. */
export function tag(): string {
  return Math.random()
    .toString(36)
    .slice(2, 10)
    .replace(/[^a-z0-9]/g, 'x');
}
