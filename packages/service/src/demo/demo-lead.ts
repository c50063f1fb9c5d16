import type { ActorKind } from '../schemas/enums.js';
import type { CrmEvent } from '../write/events/events.js';
import { newPerson, submissions, variant } from './demo-contact.js';
import { interactions } from './demo-interactions.js';
import type { DemoRandom } from './demo-random.js';
import { STORIES, STORY_WEIGHTS, type Story } from './demo-stories.js';
import type { TeamPlan } from './demo-team.js';
import type { Timeline } from './demo-timeline.js';

/** Counters of a team that pick variants shown once per kind (for example the ad submission shapes). */
export interface TeamCounters {
  ads: number;
}

export interface StoryInput {
  rng: DemoRandom;
  plan: TeamPlan;
  /** Another team of the organization to transfer to, when there is one. */
  otherTeam: TeamPlan | undefined;
  index: number;
  time: Timeline;
  /** Leaves the team at the end: may be assigned only until then. */
  early: boolean;
  counters: TeamCounters;
}

/** Every event of one lead's story, in order: creation, pipeline moves, calls, conversations, bookings. */
export function leadStory(input: StoryInput): CrmEvent[] {
  const { rng, plan, index, time } = input;
  let story = variant(rng, STORIES, index, STORY_WEIGHTS);
  if (story === 'transferred' && !input.otherTeam) story = 'archived';
  const lead = rng.id('lead');
  const stages = plan.sales.stages;
  const pool = input.early ? [...plan.members, ...plan.leavers] : plan.members;
  const owner = rng.pick(pool);
  const person = newPerson(rng, plan, index, lead, time.now);
  const events: CrmEvent[] = [];
  const actor = (): ActorKind => rng.pick(['human', 'human', 'human', 'ai', 'api'] as const);
  const move = (stage: string, withActor = true) =>
    events.push({
      type: 'lead.stage_moved',
      at: time.after(rng.int(10, 2000)),
      lead,
      stage,
      ...(withActor ? { actor: actor() } : {}),
    });
  const status = (to: 'contacted' | 'qualified' | 'negotiating' | 'lost' | 'unreachable', by = actor()) =>
    events.push({ type: 'lead.status_set', at: time.after(rng.int(10, 3000)), lead, status: to, actor: by });

  if (story === 'client') {
    events.push({ ...person.fields, status: null, actor: 'human' });
  } else if (story === 'onboarding') {
    events.push({
      ...person.fields,
      status: 'new',
      actor: 'api',
      stage: plan.onboarding.stages[0]!,
      assignees: [owner],
    });
    move(plan.onboarding.stages[1]!, false);
  } else {
    events.push({ ...person.fields, status: 'new', actor: actor(), stage: stages.inquiry, assignees: [owner] });
  }
  if (person.source.ads) {
    events.push(...submissions(rng, lead, time.now, time.after(rng.int(60, 2000)), input.counters.ads));
    input.counters.ads += 1;
  }

  const reached = (s: Story) => STORIES.indexOf(story) >= STORIES.indexOf(s);
  const pipeline = !['client', 'onboarding', 'new'].includes(story);
  if (pipeline) {
    status('contacted', 'human');
    move(stages.contacted);
  }
  if (pipeline && reached('qualified') && !['lost', 'unreachable'].includes(story)) {
    status('qualified', 'ai');
    // Moved by an automation: no actor recorded, the activity reads `unknown`.
    move(stages.booked, false);
    events.push({
      type: 'lead.assignees_set',
      at: time.after(rng.int(5, 600)),
      lead,
      assignees: [owner, rng.pick(plan.members)],
    });
  }
  switch (story) {
    case 'negotiating':
      status('negotiating');
      move(stages.proposal);
      break;
    case 'converted':
      move(stages.won);
      events.push({
        type: 'lead.converted',
        at: time.after(rng.int(60, 5000)),
        lead,
        clear_pipeline: false,
        actor: 'human',
      });
      break;
    case 'converted_cleared':
      events.push({
        type: 'lead.converted',
        at: time.after(rng.int(60, 5000)),
        lead,
        clear_pipeline: true,
        value: rng.int(10, 300) * 100,
        actor: 'human',
      });
      break;
    case 'lost':
      status('lost');
      break;
    case 'unreachable':
      status('unreachable', 'system');
      break;
    case 'archived':
    case 'unarchived':
    case 'revived': {
      const reason = rng.pick([
        'not_interested',
        'no_contact',
        'not_qualified',
        'opt_out',
        'no_consent',
        'Moved abroad',
      ]);
      events.push({ type: 'lead.archived', at: time.after(rng.int(60, 9000)), lead, reason, actor: 'human' });
      if (story === 'unarchived')
        events.push({ type: 'lead.unarchived', at: time.after(rng.int(60, 9000)), lead, actor: 'human' });
      // The contact writes again on their own: the lead reopens as new.
      if (story === 'revived') events.push({ type: 'lead.revived', at: time.after(rng.int(600, 20_000)), lead });
      break;
    }
    case 'merged': {
      // The same person came in again through another channel; the duplicate is merged into the first lead.
      const duplicate = rng.id('lead');
      const again = newPerson(rng, plan, index + 1, duplicate, time.after(rng.int(60, 3000)));
      events.push({
        ...again.fields,
        name: person.fields.name,
        surname: person.fields.surname,
        email: person.fields.email ? person.fields.email.toUpperCase() : null,
        status: 'new',
        stage: stages.inquiry,
        whatsapp_consent: false,
        email_opt_out: true,
      });
      events.push({ type: 'lead.merged', at: time.after(rng.int(10, 600)), kept: lead, duplicate, actor: 'human' });
      break;
    }
    case 'transferred':
      events.push({
        type: 'lead.transferred',
        at: time.after(rng.int(60, 3000)),
        lead,
        to_team: input.otherTeam!.team,
        new_lead: rng.chance(0.9) || index < STORIES.length ? rng.id('lead') : null,
        actor: 'human',
      });
      break;
  }
  if (rng.chance(0.3)) {
    events.push({ type: 'lead.updated', at: time.after(rng.int(5, 900)), lead, company: rng.faker.company.name() });
  }
  if (rng.chance(0.3)) {
    // Not exported: no new version, no feed item.
    events.push({ type: 'lead.internal_updated', at: time.after(rng.int(5, 900)), lead, score: rng.int(0, 100) });
  }
  const removed = story === 'erased' || story === 'deleted';
  events.push(...interactions({ rng, plan, lead, index, time, pool, story }));
  if (removed)
    events.push({ type: story === 'erased' ? 'lead.erased' : 'lead.deleted', at: time.after(rng.int(60, 9000)), lead });
  return events;
}
