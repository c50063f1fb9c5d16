// Histories that kill the consumer (SIGKILL, its process group) in the middle of a page and at each step
// of a resync; the next run resumes with the same state directory. After every kill the consumer writes
// the copy it holds in a run of its own, and the kit judges that copy too: what a reader sees meanwhile.
import {
  counter,
  cursorOf,
  editPage,
  ghost,
  type History,
  isFeed,
  noFaults,
  plain,
  readPage,
} from './history-tools.js';

export const KILL_HISTORIES: History[] = [
  {
    name: 'kill-mid-page',
    summary:
      'the consumer is killed halfway through storing the first team’s second feed page (run 1) and the first page of runs 2 and 3; run 4 finishes',
    runs: 4,
    minTeams: 1,
    firstTeamOnly: true,
    kills: [1, 2, 3],
    start(ctx) {
      const team = ctx.teams[0] as string;
      return plain({
        script(run, control) {
          const c = counter();
          const at = run === 1 ? 2 : 1;
          return {
            plan: noFaults(),
            rewrite(r, body) {
              if (run < 4 && isFeed(r) && r.team === team && c.count(r) === at)
                control.killMidPage(
                  `halfway through storing ${team}'s feed page ${at} of run ${run}`,
                  readPage(body).data.length,
                );
              return body;
            },
          };
        },
      });
    },
  },
  {
    name: 'kill-during-resync',
    summary:
      'run 1: an initial sync of the first team whose first page also carries a record the service no longer has; then every cursor issued so far answers 410 sync_cursor_expired, and the consumer is killed at its first write after the 410 (run 2), halfway through storing the resync’s first page (run 3) and its page with has_more false (run 4); run 5 finishes',
    runs: 5,
    minTeams: 1,
    firstTeamOnly: true,
    kills: [2, 3, 4],
    start() {
      const issued = new Set<string>();
      let expired: ReadonlySet<string> = new Set();
      let ghosted = false;
      return plain({
        script(run, control) {
          const c = counter();
          let resyncPage = false;
          if (run === 2) expired = new Set(issued);
          return {
            plan: {
              next(r) {
                if (!isFeed(r) || run === 1) return null;
                const cursor = cursorOf(r);
                if (cursor === null || !expired.has(cursor)) return null;
                if (run === 2) control.killAtFirstWrite('at its first write after the 410 that starts its resync');
                return { kind: 'sync_cursor_expired' };
              },
            },
            rewrite(r, body) {
              if (!isFeed(r)) return body;
              const n = c.count(r);
              let out = body;
              if (run === 1 && n === 1)
                out = editPage(body, (p) => {
                  const g = ghost(p, 3);
                  if (g) p.data.push(g);
                  ghosted = g !== undefined;
                });
              const page = readPage(out);
              issued.add(page.next_cursor);
              if (run === 3 && cursorOf(r) === null && !resyncPage) {
                resyncPage = true;
                control.killMidPage('halfway through storing the first page of its resync', page.data.length);
              }
              if (run === 4 && !page.has_more)
                control.killMidPage('halfway through storing the resync’s page with has_more false', page.data.length);
              return out;
            },
          };
        },
        incomplete: () =>
          ghosted ? [] : ['the first page of run 1 had no record to copy as one the service no longer has'],
      });
    },
  },
];
