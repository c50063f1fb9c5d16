// Histories of the contract's other answers: 5xx with and without Retry-After and lost connections,
// 409 capture_not_ready, and a 404 team_not_accessible for a team /teams still lists.
import type { Fault } from '../fault-proxy/fault-plan.js';
import { counter, feedFaults, type History, isFeed, isTeams, noFaults, plain, reached } from './history-tools.js';

/** The faults of each team's feed requests 2, 3, 5 and 6, alternating between teams so both sets are met. */
const SERVER_FAULTS: Record<number, Fault>[] = [
  {
    2: { kind: 'internal_error' },
    3: { kind: 'service_unavailable', retryAfter: 1 },
    5: { kind: 'cut_connection' },
    6: { kind: 'cut_mid_body' },
  },
  {
    2: { kind: 'service_unavailable' },
    3: { kind: 'internal_error', retryAfter: 1 },
    5: { kind: 'cut_mid_body' },
    6: { kind: 'cut_connection' },
  },
];

export const ANSWER_HISTORIES: History[] = [
  {
    name: 'server-errors',
    summary:
      'the first /teams answers 500; each team’s feed requests 2, 3, 5 and 6 answer 500 and 503 with and without Retry-After, close the connection before the answer and reset it in the middle of the body',
    runs: 1,
    minTeams: 1,
    start(ctx) {
      const c = counter();
      return plain({
        script: () => ({
          plan: {
            next(r) {
              const n = c.count(r);
              if (isTeams(r)) return n === 1 ? { kind: 'internal_error' } : null;
              if (!isFeed(r) || r.team === undefined) return null;
              const faults = SERVER_FAULTS[ctx.teams.indexOf(r.team) % SERVER_FAULTS.length];
              return faults?.[n] ?? null;
            },
          },
        }),
        incomplete: () => reached(ctx, c, 7, 'the last fault'),
      });
    },
  },
  {
    name: 'capture-not-ready',
    summary:
      'run 1: each team’s second feed request answers 409 capture_not_ready (the team is being prepared again); run 2: no fault',
    runs: 2,
    minTeams: 1,
    start(ctx) {
      const first = counter();
      return plain({
        script: (run) =>
          run === 1 ? { plan: feedFaults(first, { 2: { kind: 'capture_not_ready' } }) } : { plan: noFaults() },
        incomplete: () => reached(ctx, first, 2, 'the 409 in run 1'),
      });
    },
  },
  {
    name: 'team-404-still-listed',
    summary:
      'run 1: the first team’s second feed request answers 404 team_not_accessible while /teams still lists the team; run 2: no fault',
    runs: 2,
    minTeams: 1,
    mayEndRefused: [1],
    start(ctx) {
      const first = counter();
      const team = ctx.teams[0] as string;
      return plain({
        script: (run) => ({
          plan:
            run === 1
              ? {
                  next: (r) =>
                    isFeed(r) && r.team === team && first.count(r) === 2 ? { kind: 'team_not_accessible' } : null,
                }
              : noFaults(),
        }),
        incomplete: () =>
          first.feed(team) < 2 ? [`${team}: only ${first.feed(team)} feed request(s) in run 1, the 404 needs 2`] : [],
      });
    },
  },
];
