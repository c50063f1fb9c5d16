import { iso } from '../clock.js';
import type { CrmEvent } from '../write/events/events.js';
import { leadStory, type TeamCounters } from './demo-lead.js';
import { DemoRandom } from './demo-random.js';
import { organizationEvent, type TeamPlan, teamEpilogue, teamSetup } from './demo-team.js';
import { Timeline } from './demo-timeline.js';

export interface DemoOptions {
  seed: number;
  /** Example teams of the one organization. */
  teams: number;
  /** Leads per team. */
  leads: number;
  /** Business times end here (epoch ms); the story of the data covers the days before it. */
  now: number;
  /** Days of history before `now`. */
  days?: number;
}

export const DEFAULT_DEMO_DAYS = 90;
const DAY = 86_400_000;

/** One step of the generation: the events of one lead (or of setup), and how many leads it completes. */
export interface DemoChunk {
  events: CrmEvent[];
  leads: number;
}

/**
 * The demo's events, generated lazily: setup of the organization and every team, then one lead at a
 * time (teams interleaved, so time moves forward across the whole organization), then what happens
 * at the end (members leave, a service is deleted, a board is archived). Nothing is held beyond the
 * current lead, so memory stays flat for a million leads.
 */
export function* demoEvents(options: DemoOptions): Generator<DemoChunk> {
  const rng = new DemoRandom(options.seed);
  const days = options.days ?? DEFAULT_DEMO_DAYS;
  const start = options.now - days * DAY;
  const setupAt = iso(start - DAY);
  const org = organizationEvent(rng, setupAt);
  const setup = Array.from({ length: options.teams }, (_, t) => teamSetup(rng, t, org.organization, setupAt));
  yield { events: [org.event, ...setup.flatMap((s) => s.events)], leads: 0 };

  const plans: TeamPlan[] = setup.map((s) => s.plan);
  const counters: TeamCounters[] = plans.map(() => ({ ads: 0 }));
  // Stories start in the first 90% of the period so most of them have time to unfold.
  const spread = days * DAY * 0.9;
  for (let index = 0; index < options.leads; index++) {
    for (const [t, plan] of plans.entries()) {
      const base = start + (options.leads > 1 ? (index / (options.leads - 1)) * spread : 0);
      const time = new Timeline(base + rng.int(0, 3_600_000), options.now);
      const events = leadStory({
        rng,
        plan,
        otherTeam: plans.length > 1 ? plans[(t + 1) % plans.length] : undefined,
        index,
        time,
        early: index < options.leads / 2,
        counters: counters[t]!,
      });
      yield { events, leads: 1 };
    }
  }

  const endAt = iso(options.now);
  for (const plan of plans) {
    // A call nobody could link to a lead.
    const unlinked: CrmEvent = {
      type: 'call.recorded',
      at: endAt,
      team: plan.team,
      call: rng.id('call'),
      lead: null,
      line: 'own_line',
      direction: 'inbound',
      started_at: endAt,
      duration_seconds: 12,
      carrier_result: 'answered',
      verdict: 'answered_human',
    };
    yield { events: [unlinked, ...teamEpilogue(plan, endAt)], leads: 0 };
  }
}

/** The ids the demo gives its organization and teams for a seed, without generating any lead. */
export function demoTeamIds(options: Pick<DemoOptions, 'seed' | 'teams'>): string[] {
  const first = demoEvents({ ...options, leads: 0, now: 0 }).next();
  if (first.done) return [];
  return first.value.events.flatMap((e) => (e.type === 'team.upsert' ? [e.team] : []));
}
