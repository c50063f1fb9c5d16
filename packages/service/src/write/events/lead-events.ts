import { Type } from 'typebox';
import { LEAD_STATUSES } from '../../schemas/enums.js';
import { Id, Nullable, StringEnum } from '../../schemas/helpers.js';
import {
  Actor,
  CaptureInput,
  Event,
  IdName,
  InternalId,
  LeadFields,
  Members,
  NullableTime,
  Opt,
  PermissionsInput,
  Text,
} from './event-fields.js';

/** The events of leads and clients, and the ad submissions that reach them. */
export const LEAD_EVENTS = {
  'lead.created': Event(
    'lead.created',
    {
      team: Id('team'),
      lead: Id('lead'),
      status: Opt(Nullable(StringEnum(LEAD_STATUSES, 'null creates a client record'))),
      actor: Opt(Actor),
      ...LeadFields,
      stage: Opt(Nullable(Id('stage'))),
      board: Opt(Nullable(Id('board'))),
      assignees: Opt(Members),
      ...PermissionsInput,
      capture: Opt(Nullable(CaptureInput)),
    },
    'a lead or client is created (status null makes a client)',
  ),
  'lead.updated': Event('lead.updated', { lead: Id('lead'), ...LeadFields }, 'exported fields of a lead change'),
  'lead.internal_updated': Event(
    'lead.internal_updated',
    {
      lead: Id('lead'),
      score: Opt(Nullable(Type.Number())),
      language: Opt(Nullable(Type.String())),
      last_viewed_at: Opt(NullableTime),
    },
    'fields that are not exported change: no version, no feed item',
  ),
  'lead.contact_permissions': Event(
    'lead.contact_permissions',
    { lead: Id('lead'), ...PermissionsInput },
    'contact permissions change',
  ),
  'lead.status_set': Event(
    'lead.status_set',
    { lead: Id('lead'), status: StringEnum(LEAD_STATUSES), actor: Actor },
    'the pipeline status changes (archive, unarchive and conversion have their own events)',
  ),
  'lead.archived': Event(
    'lead.archived',
    {
      lead: Id('lead'),
      reason: Text('a reason value; free text reads other'),
      actor: Opt(Actor),
    },
    'the lead is archived',
  ),
  'lead.unarchived': Event(
    'lead.unarchived',
    { lead: Id('lead'), status: Opt(StringEnum(LEAD_STATUSES)), actor: Opt(Actor) },
    'an archived lead is reopened by the team',
  ),
  'lead.revived': Event(
    'lead.revived',
    { lead: Id('lead'), status: Opt(StringEnum(LEAD_STATUSES)), actor: Opt(Actor) },
    'the contact comes back on their own and reopens an archived lead',
  ),
  'lead.stage_moved': Event(
    'lead.stage_moved',
    { lead: Id('lead'), stage: Id('stage'), actor: Opt(Actor) },
    'the lead moves to a stage (without actor: a change made on its own)',
  ),
  'lead.assignees_set': Event(
    'lead.assignees_set',
    { lead: Id('lead'), assignees: Members, actor: Opt(Actor) },
    'the assignees of a lead change (without actor: a change made on its own)',
  ),
  'lead.converted': Event(
    'lead.converted',
    {
      lead: Id('lead'),
      clear_pipeline: Type.Boolean(),
      value: Opt(Nullable(Type.Number({ description: 'value at conversion; default the estimated value' }))),
      actor: Opt(Actor),
    },
    'the lead is converted, optionally clearing pipeline data',
  ),
  'lead.merged': Event(
    'lead.merged',
    { kept: Id('lead'), duplicate: Id('lead'), actor: Opt(Actor) },
    'two leads of one person are merged; the duplicate is archived',
  ),
  'lead.transferred': Event(
    'lead.transferred',
    { lead: Id('lead'), to_team: Id('team'), new_lead: Nullable(Id('lead')), actor: Opt(Actor) },
    'the lead moves to another team of the organization (new_lead: its id there, null when it cannot be named)',
  ),
  'lead.erased': Event(
    'lead.erased',
    { lead: Id('lead') },
    "the person's data is erased (or the lead permanently deleted)",
  ),
  'lead.deleted': Event('lead.deleted', { lead: Id('lead') }, 'the lead leaves the API data'),
  'submission.received': Event(
    'submission.received',
    {
      submission: InternalId,
      lead: Id('lead'),
      submitted_at: Opt(NullableTime),
      external_provider: Opt(Nullable(Type.String())),
      campaign: Opt(IdName),
      ad: Opt(IdName),
      ad_set: Opt(IdName),
      form: Opt(IdName),
    },
    'an ad submission arrives for a lead (also a repeat on an existing contact)',
  ),
  'submission.deleted': Event(
    'submission.deleted',
    { submission: InternalId },
    'the ad platform reports a submission deleted',
  ),
} as const;
