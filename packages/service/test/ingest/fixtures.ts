import type { CrmEvent } from '../../src/write/events/events.js';

/** A small valid ingest file: an organization, a team with a board, a member and a lead. */
export const VALID_EVENTS: CrmEvent[] = [
  {
    type: 'organization.upsert',
    at: '2026-01-10T09:00:00Z',
    organization: 'org_acme',
    name: 'Acme',
    plan: 'api_included',
  },
  {
    type: 'team.upsert',
    at: '2026-01-10T09:00:00Z',
    team: 'team_acme1',
    organization: 'org_acme',
    name: 'Acme Berlin',
    default_country: 'DE',
    state: 'active',
    legal_setup_done: true,
  },
  {
    type: 'board.upsert',
    at: '2026-01-10T09:00:00Z',
    team: 'team_acme1',
    board: 'brd_sales',
    name: 'Sales',
    is_default: true,
    stages: [
      { stage: 'stg_new', name: 'New', is_default: true },
      { stage: 'stg_won', name: 'Won', is_final: true },
    ],
  },
  { type: 'member.joined', at: '2026-01-10T09:00:00Z', team: 'team_acme1', member: 'mem_anna', display_name: 'Anna' },
  {
    type: 'lead.created',
    at: '2026-01-11T10:30:00Z',
    team: 'team_acme1',
    lead: 'lead_1',
    status: 'new',
    name: 'Jonas',
    phone: '+49 151 23456789',
    stage: 'stg_new',
    assignees: ['mem_anna'],
  },
  { type: 'lead.status_set', at: '2026-01-11T11:00:00Z', lead: 'lead_1', status: 'contacted', actor: 'human' },
];

export const ndjson = (events: readonly unknown[]): string => `${events.map((e) => JSON.stringify(e)).join('\n')}\n`;
