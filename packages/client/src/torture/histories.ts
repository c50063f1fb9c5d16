// The scripted failure histories of the torture kit: what the proxy does to the consumer's requests in
// each run, what the kit changes in the service, and what the copy must hold afterwards. The histories
// of made-up answers, of a changing service and of killed runs are in histories-*.ts.
import type { Fault } from '../fault-proxy/fault-plan.js';
import type { CopyRecord } from './copy.js';
import { ANSWER_HISTORIES } from './histories-answers.js';
import { CHANGE_HISTORIES } from './histories-changes.js';
import { KILL_HISTORIES } from './histories-kills.js';
import {
  counter,
  editPage,
  type FeedItem,
  feedFaults,
  GHOST_KINDS,
  ghost,
  type History,
  isFeed,
  latestItem,
  noFaults,
  plain,
  reached,
} from './history-tools.js';

export type { History, HistoryContext, HistoryRun, RunScript } from './history-tools.js';

const FIRST_HISTORIES: History[] = [
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

/** Every history, in the order the kit runs them (the ones that change the service last). */
export const HISTORIES: History[] = [...FIRST_HISTORIES, ...ANSWER_HISTORIES, ...KILL_HISTORIES, ...CHANGE_HISTORIES];
