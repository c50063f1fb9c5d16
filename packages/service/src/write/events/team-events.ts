import { Type } from 'typebox';
import { ORGANIZATION_PLANS, TEAM_STATES } from '../../schemas/enums.js';
import { Id, Nullable, StringEnum } from '../../schemas/helpers.js';
import { Event, InternalId, NullableTime, Opt, StageInput, Text } from './event-fields.js';

/** The events of the organization, its teams, members, bookable services and boards. */
export const TEAM_EVENTS = {
  'organization.upsert': Event(
    'organization.upsert',
    {
      organization: InternalId,
      name: Text(),
      plan: StringEnum(ORGANIZATION_PLANS),
      api_agreed: Opt(Type.Boolean()),
    },
    'creates or changes an organization',
  ),
  'team.upsert': Event(
    'team.upsert',
    {
      team: Id('team'),
      organization: Opt(Nullable(InternalId)),
      name: Opt(Nullable(Type.String({ minLength: 1 }))),
      business_hours_timezone: Opt(Nullable(Type.String())),
      default_country: Opt(Nullable(Type.String({ pattern: '^[A-Z]{2}$' }))),
      livemode: Opt(Type.Boolean()),
      state: Opt(StringEnum(TEAM_STATES)),
      legal_setup_done: Opt(Type.Boolean()),
      sensitive_sector: Opt(Type.Boolean()),
      captured_at: Opt(NullableTime),
    },
    'creates or changes a team (omitted fields keep their value)',
  ),
  'member.joined': Event(
    'member.joined',
    { team: Id('team'), member: Id('member'), display_name: Opt(Nullable(Type.String())) },
    'a member joins a team',
  ),
  'member.left': Event('member.left', { member: Id('member') }, 'a member leaves the team'),
  'service.created': Event(
    'service.created',
    { team: Id('team'), service: Id('booking_service'), name: Text(), meeting_type: Opt(Text()) },
    'a bookable service is created',
  ),
  'service.deleted': Event('service.deleted', { service: Id('booking_service') }, 'a bookable service is deleted'),
  'board.upsert': Event(
    'board.upsert',
    {
      team: Id('team'),
      board: Id('board'),
      name: Text(),
      is_default: Opt(Type.Boolean()),
      appointment_booked_stage: Opt(
        Nullable(Id('stage', 'where booked appointments land; null or omitted: see docs/write-side.md')),
      ),
      stages: Type.Array(StageInput, { minItems: 1, description: 'in pipeline order; a board has at least one stage' }),
    },
    'creates a board or replaces its name and stages',
  ),
  'board.archived': Event('board.archived', { board: Id('board') }, 'a board is archived'),
} as const;
