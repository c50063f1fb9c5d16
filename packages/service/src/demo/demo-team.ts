import type { CrmEvent } from '../write/events/events.js';
import type { DemoRandom } from './demo-random.js';

/** What the lead stories of a team refer to. */
export interface TeamPlan {
  team: string;
  /** Country of most of the team's customers: picks phone formats. */
  country: 'DE' | 'ES' | 'US';
  sales: { board: string; stages: SalesStages };
  onboarding: { board: string; stages: string[] };
  /** Boards archived once every lead was generated. */
  archivedBoard: string;
  /** Members who stay; assignees come from these. */
  members: string[];
  /** Members who handle early leads and leave the team at the end (older records keep naming them). */
  leavers: string[];
  /** Services that stay listed. */
  services: string[];
  /** A service some bookings use, deleted at the end (its bookings keep naming it). */
  deletedService: string;
}

export interface SalesStages {
  inquiry: string;
  contacted: string;
  booked: string;
  proposal: string;
  won: string;
  archive: string;
}

/** Team profiles cycle through the three ways a team's timezone is derived (spec: Team.timezone). */
const PROFILES = [
  { country: 'DE', businessHours: 'Europe/Berlin', defaultCountry: 'DE', suffix: 'Berlin' },
  { country: 'ES', businessHours: null, defaultCountry: 'ES', suffix: 'Madrid' },
  { country: 'US', businessHours: null, defaultCountry: null, suffix: 'Remote' },
  { country: 'US', businessHours: 'America/New_York', defaultCountry: 'US', suffix: 'New York' },
] as const;

const SERVICE_NAMES = ['Initial consultation', 'Site visit', 'Follow-up meeting', 'Product demo'] as const;

/** The organization on the API plan that owns every demo team. */
export function organizationEvent(rng: DemoRandom, at: string): { organization: string; event: CrmEvent } {
  const organization = rng.internalId('org');
  return {
    organization,
    event: {
      type: 'organization.upsert',
      at,
      organization,
      name: `${rng.faker.company.name()} Group`,
      plan: 'api_included',
    },
  };
}

/** Setup events of one example team: the team, its boards and stages, members and bookable services. */
export function teamSetup(
  rng: DemoRandom,
  index: number,
  organization: string,
  at: string,
): { plan: TeamPlan; events: CrmEvent[] } {
  const profile = PROFILES[index % PROFILES.length]!;
  const team = rng.id('team');
  const events: CrmEvent[] = [
    {
      type: 'team.upsert',
      at,
      team,
      organization,
      name: `${rng.faker.company.name()} ${profile.suffix}`,
      business_hours_timezone: profile.businessHours,
      default_country: profile.defaultCountry,
      livemode: false,
      state: 'active',
      legal_setup_done: true,
      sensitive_sector: false,
    },
  ];

  const sales: SalesStages = {
    inquiry: rng.id('stage'),
    contacted: rng.id('stage'),
    booked: rng.id('stage'),
    proposal: rng.id('stage'),
    won: rng.id('stage'),
    archive: rng.id('stage'),
  };
  const salesBoard = rng.id('board');
  events.push({
    type: 'board.upsert',
    at,
    team,
    board: salesBoard,
    name: 'Sales',
    is_default: true,
    appointment_booked_stage: sales.booked,
    stages: [
      { stage: sales.inquiry, name: 'New inquiry', is_default: true, mode: 'automated' },
      { stage: sales.contacted, name: 'Contacted', mode: 'standard' },
      { stage: sales.booked, name: 'Appointment booked', mode: 'automated' },
      { stage: sales.proposal, name: 'Proposal sent', mode: 'supervised' },
      { stage: sales.won, name: 'Won', is_final: true, mode: 'standard' },
      { stage: sales.archive, name: 'Archive', is_archive: true, mode: 'standard' },
    ],
  });
  const onboardingStages = [rng.id('stage'), rng.id('stage'), rng.id('stage')];
  const onboardingBoard = rng.id('board');
  events.push({
    type: 'board.upsert',
    at,
    team,
    board: onboardingBoard,
    name: 'Onboarding',
    appointment_booked_stage: null,
    stages: ['Kickoff', 'Setup', 'Live'].map((name, i) => ({
      stage: onboardingStages[i]!,
      name,
      is_default: i === 0,
      is_final: i === 2,
      mode: 'standard',
    })),
  });
  const archivedBoard = rng.id('board');
  events.push({
    type: 'board.upsert',
    at,
    team,
    board: archivedBoard,
    name: 'Spring campaign',
    appointment_booked_stage: null,
    stages: [{ stage: rng.id('stage'), name: 'Interested', is_default: true, mode: 'standard' }],
  });

  const members = Array.from({ length: 5 }, () => rng.id('member'));
  const leavers = Array.from({ length: 2 }, () => rng.id('member'));
  for (const member of [...members, ...leavers]) {
    events.push({ type: 'member.joined', at, team, member, display_name: rng.faker.person.fullName() });
  }
  // A member without a display name exports `display_name: null`.
  const unnamed = rng.id('member');
  members.push(unnamed);
  events.push({ type: 'member.joined', at, team, member: unnamed, display_name: null });

  const services = SERVICE_NAMES.slice(0, 3).map(() => rng.id('booking_service'));
  services.forEach((service, i) => {
    events.push({
      type: 'service.created',
      at,
      team,
      service,
      name: SERVICE_NAMES[i]!,
      meeting_type: i === 1 ? 'in_person' : rng.pick(['in_person', 'video_call', 'phone_call']),
    });
  });
  const deletedService = rng.id('booking_service');
  events.push({
    type: 'service.created',
    at,
    team,
    service: deletedService,
    name: SERVICE_NAMES[3],
    meeting_type: 'video_call',
  });

  return {
    plan: {
      team,
      country: profile.country,
      sales: { board: salesBoard, stages: sales },
      onboarding: { board: onboardingBoard, stages: onboardingStages },
      archivedBoard,
      members,
      leavers,
      services,
      deletedService,
    },
    events,
  };
}

/** What happens once every lead exists: members leave, a service is deleted, an old board is archived. */
export function teamEpilogue(plan: TeamPlan, at: string): CrmEvent[] {
  return [
    ...plan.leavers.map((member): CrmEvent => ({ type: 'member.left', at, member })),
    { type: 'service.deleted', at, service: plan.deletedService },
    { type: 'board.archived', at, board: plan.archivedBoard },
  ];
}
