// The scripted failure histories of the torture kit: what the proxy does to the consumer's requests in
// each run, and what the copy must hold afterwards.
import type { Fault, FaultPlan, FaultRequest } from '../fault-proxy/fault-plan.js';
import { type CopyRecord, recordKey } from './copy.js';

export interface HistoryContext {
  /** Teams the key reads (from `/v1/teams`, read directly). */
  teams: string[];
  /** Every record the lists serve, by `team/kind/id`. */
  expected: ReadonlyMap<string, CopyRecord>;
}

/** What the proxy does during one run of the consumer. */
export interface RunScript {
  plan: FaultPlan;
  rewrite?: (request: FaultRequest, body: Buffer) => Buffer;
}

/** One history as it unfolds: the script of each run and, afterwards, what the copy is judged against. */
export interface HistoryRun {
  script(run: number): RunScript;
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
  start(ctx: HistoryContext): HistoryRun;
}

interface FeedItem {
  kind: string;
  id: string;
  version: number;
  object?: Record<string, unknown>;
  removed?: unknown;
}
interface FeedPage {
  data: FeedItem[];
  [field: string]: unknown;
}

const FEED = '/sync/changes';
const isFeed = (r: FaultRequest) => r.path.endsWith(FEED);

/** Numbers each request per path and team (1, 2, ...), so a script can say "the team's second feed request". */
function counter() {
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

function editPage(body: Buffer, edit: (page: FeedPage) => void): Buffer {
  const page = JSON.parse(body.toString('utf8')) as FeedPage;
  edit(page);
  return Buffer.from(JSON.stringify(page));
}

/** An item of the page that carries the version the lists serve (its record's latest), of one of `kinds`. */
function latestItem(page: FeedPage, team: string, ctx: HistoryContext, kinds: string[]): FeedItem | undefined {
  for (const kind of kinds) {
    const item = page.data.find((i) => {
      const want = ctx.expected.get(recordKey({ team, kind: i.kind, id: i.id }));
      return i.kind === kind && i.object && want?.version === i.version;
    });
    if (item) return item;
  }
  return undefined;
}

const GHOST_KINDS = ['call', 'conversation', 'booking', 'board'];

/**
 * A copy of a record of the page under a new id: a record the service no longer has (a restore took it
 * away, or its removal fell out of the feed), which only a full resync's sweep deletes.
 */
function ghost(page: FeedPage, n: number): FeedItem | undefined {
  const model = page.data.find((i) => GHOST_KINDS.includes(i.kind) && i.object);
  if (!model?.object) return undefined;
  const id = `${model.id.split('_')[0]}_TortureGhost${n}`;
  return { kind: model.kind, id, version: 1, object: { ...model.object, id, version: 1 } };
}

function noFaults(): FaultPlan {
  return { next: () => null };
}

/** Faults on each team's feed requests by their number. */
function feedFaults(c: ReturnType<typeof counter>, faults: Record<number, Fault>, teamsFault?: Fault): FaultPlan {
  return {
    next(r) {
      const n = c.count(r);
      if (isFeed(r)) return faults[n] ?? null;
      if (teamsFault && r.path.endsWith('/teams') && n === 1) return teamsFault;
      return null;
    },
  };
}

const plain = (runs: { script: (run: number) => RunScript; incomplete?: () => string[] }): HistoryRun => ({
  script: runs.script,
  overrides: () => [],
  leftTeams: () => [],
  incomplete: runs.incomplete ?? (() => []),
});

/** Requires every team to have made at least `n` feed requests (the scripted fault was reached). */
function reached(ctx: HistoryContext, c: ReturnType<typeof counter>, n: number, what: string): string[] {
  return ctx.teams
    .filter((t) => c.feed(t) < n)
    .map((t) => `${t}: only ${c.feed(t)} feed request(s), ${what} needs ${n}`);
}

export const HISTORIES: History[] = [
  {
    name: 'clean',
    summary: 'no fault: an initial sync of every team the key reads',
    runs: 1,
    minTeams: 1,
    start: () => plain({ script: () => ({ plan: noFaults() }) }),
  },
  {
    name: 'rate-limit-storm',
    summary:
      'the first /teams and each team’s feed requests 2 to 4 answer 429 (rate_limited, rate_limited, quota_exceeded) with Retry-After: 1',
    runs: 1,
    minTeams: 1,
    start(ctx) {
      const c = counter();
      const rl = (kind: 'rate_limited' | 'quota_exceeded'): Fault => ({ kind, retryAfter: 1 });
      return plain({
        script: () => ({
          plan: feedFaults(
            c,
            { 2: rl('rate_limited'), 3: rl('rate_limited'), 4: rl('quota_exceeded') },
            rl('rate_limited'),
          ),
        }),
        incomplete: () => reached(ctx, c, 5, 'the storm'),
      });
    },
  },
  {
    name: 'firewall-429',
    summary:
      'the first /teams and each team’s feed requests 2 and 3 get the firewall’s bare 429: no body, no Retry-After',
    runs: 1,
    minTeams: 1,
    start(ctx) {
      const c = counter();
      const fw: Fault = { kind: 'firewall_429' };
      return plain({
        script: () => ({ plan: feedFaults(c, { 2: fw, 3: fw }, fw) }),
        incomplete: () => reached(ctx, c, 4, 'the firewall answers'),
      });
    },
  },
  {
    name: 'expired-cursor-mid-initial-sync',
    summary:
      'each team’s first feed page also carries a record the service no longer has; its second feed request answers 410 sync_cursor_expired',
    runs: 1,
    minTeams: 1,
    start(ctx) {
      const c = counter();
      return plain({
        script: () => ({
          plan: feedFaults(c, { 2: { kind: 'sync_cursor_expired' } }),
          rewrite: (r, body) =>
            isFeed(r) && c.count(r) === 1
              ? editPage(body, (p) => {
                  const g = ghost(p, 1);
                  if (g) p.data.push(g);
                })
              : body,
        }),
        incomplete: () => reached(ctx, c, 3, 'a resync after the 410'),
      });
    },
  },
  {
    name: 'resync-after-restore',
    summary:
      'run 1: an initial sync whose first page per team also carries a record the service no longer has and a record at a version the service never reached (data a restore took back); run 2: the first feed request answers 409 resync_required',
    runs: 2,
    minTeams: 1,
    start(ctx) {
      let c = counter();
      const inflated: string[] = [];
      return plain({
        script(run) {
          c = counter();
          if (run === 1) {
            return {
              plan: noFaults(),
              rewrite: (r, body) =>
                isFeed(r) && r.team && c.count(r) === 1
                  ? editPage(body, (p) => {
                      const item = latestItem(p, r.team as string, ctx, GHOST_KINDS);
                      if (item?.object) {
                        item.version += 1000;
                        item.object = { ...item.object, version: item.version };
                        inflated.push(r.team as string);
                      }
                      const g = ghost(p, 2);
                      if (g) p.data.push(g);
                    })
                  : body,
            };
          }
          return { plan: feedFaults(c, { 1: { kind: 'resync_required' } }) };
        },
        incomplete: () => [
          ...reached(ctx, c, 2, 'a resync after the 409'),
          ...ctx.teams.filter((t) => !inflated.includes(t)).map((t) => `${t}: no record to move ahead in run 1`),
        ],
      });
    },
  },
  {
    name: 'duplicate-page',
    summary: 'each team’s third feed request is answered with the second page again (its items and its cursor)',
    runs: 1,
    minTeams: 1,
    start(ctx) {
      const c = counter();
      return plain({
        script: () => ({ plan: feedFaults(c, { 3: { kind: 'duplicate_page' } }) }),
        incomplete: () => reached(ctx, c, 3, 'the repeated page'),
      });
    },
  },
  {
    name: 'team-leaves-key',
    summary:
      'after the last team’s first feed page the key no longer reads it: its requests answer 404 team_not_accessible and /teams stops listing it',
    runs: 1,
    minTeams: 2,
    start(ctx) {
      const c = counter();
      const leaver = ctx.teams[ctx.teams.length - 1] as string;
      let left = false;
      return {
        script: () => ({
          plan: {
            next(r) {
              c.count(r);
              return left && r.team === leaver ? { kind: 'team_not_accessible' } : null;
            },
          },
          rewrite(r, body) {
            if (isFeed(r) && r.team === leaver && c.count(r) === 1) left = true;
            else if (left && r.path.endsWith('/teams')) {
              const list = JSON.parse(body.toString('utf8')) as { data: { id: string }[] };
              list.data = list.data.filter((t) => t.id !== leaver);
              return Buffer.from(JSON.stringify(list));
            }
            return body;
          },
        }),
        overrides: () => [],
        leftTeams: () => [leaver],
        incomplete: () => (left ? [] : [`${leaver}: never read its first feed page`]),
      };
    },
  },
  {
    name: 'unknown-kinds-and-values',
    summary:
      'each team’s first feed page also carries an item of a kind no version of the API has sent yet, and one lead whose status holds a value the consumer cannot know',
    runs: 1,
    minTeams: 1,
    start(ctx) {
      const c = counter();
      const overrides: CopyRecord[] = [];
      return {
        script: () => ({
          plan: noFaults(),
          rewrite: (r, body) =>
            isFeed(r) && r.team && c.count(r) === 1
              ? editPage(body, (p) => {
                  const team = r.team as string;
                  const lead = latestItem(p, team, ctx, ['lead']);
                  if (lead?.object) {
                    lead.object = { ...lead.object, status: 'torture_unknown_status' };
                    overrides.push({ team, kind: 'lead', id: lead.id, version: lead.version, record: lead.object });
                  }
                  const id = 'tgz_TortureUnknown1';
                  const now = new Date().toISOString();
                  const unknown: FeedItem = {
                    kind: 'torture_gizmo',
                    id,
                    version: 1,
                    object: { id, object: 'torture_gizmo', livemode: false, team, version: 1, updated_at: now },
                  };
                  p.data.splice(Math.min(1, p.data.length), 0, unknown);
                })
              : body,
        }),
        overrides: () => overrides,
        leftTeams: () => [],
        incomplete: () =>
          ctx.teams
            .filter((t) => !overrides.some((o) => o.team === t))
            .map((t) => `${t}: no lead on its first feed page to give an unknown status`),
      };
    },
  },
];
