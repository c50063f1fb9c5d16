import { Type } from 'typebox';
import {
  changeTeam,
  createOrganization,
  listOrganizations,
  listTeams,
  setHoldsData,
  setOrganizationPlan,
} from '../../access/organizations.js';
import { AdminError } from '../../errors/admin-error.js';
import { ORGANIZATION_PLANS, TEAM_STATES } from '../../schemas/enums.js';
import { StringEnum } from '../../schemas/helpers.js';
import { type Action, action } from '../action.js';
import { DisplayName, ManageId, Organization, Team } from '../schemas.js';

// Organizations (their plan) and team eligibility: state, sector, legal setup, organization, holds data.

const yesNo = (value: boolean) => (value ? 'yes' : 'no');
const Nothing = Type.Object({}, { additionalProperties: false });

export const listOrganizationsAction = action({
  name: 'organizations.list',
  summary: 'List organizations',
  scope: 'read',
  input: Nothing,
  output: Type.Array(Organization),
  run: ({ store }) => listOrganizations(store),
});

export const createOrganizationAction = action({
  name: 'organizations.create',
  summary: 'Create an organization',
  scope: 'operate',
  input: Type.Object(
    {
      name: DisplayName,
      id: Type.Optional(ManageId),
      plan: Type.Optional(StringEnum(ORGANIZATION_PLANS)),
      apiAgreed: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
  output: Organization,
  audit: {
    action: 'organization.create',
    target: (i) => (i.id ? [i.id] : []),
    details: (i) => ({ name: i.name, plan: i.plan ?? 'api_included', apiAgreed: i.apiAgreed ?? false }),
    fromResult: (org) => ({ target: [org.id] }),
  },
  run: ({ store }, i) =>
    createOrganization(store, {
      name: i.name,
      plan: i.plan ?? 'api_included',
      apiAgreed: i.apiAgreed ?? false,
      ...(i.id ? { id: i.id } : {}),
    }),
});

export const setPlanAction = action({
  name: 'organizations.set_plan',
  summary: "Set an organization's plan",
  scope: 'operate',
  input: Type.Object(
    { id: ManageId, plan: StringEnum(ORGANIZATION_PLANS), apiAgreed: Type.Optional(Type.Boolean()) },
    { additionalProperties: false },
  ),
  output: Organization,
  audit: {
    action: 'organization.set_plan',
    target: (i) => [i.id],
    details: (i) => ({ plan: i.plan, ...(i.apiAgreed !== undefined ? { apiAgreed: yesNo(i.apiAgreed) } : {}) }),
  },
  run: ({ store }, i) =>
    setOrganizationPlan(store, i.id, {
      plan: i.plan,
      ...(i.apiAgreed !== undefined ? { apiAgreed: i.apiAgreed } : {}),
    }),
});

export const listTeamsAction = action({
  name: 'teams.list',
  summary: 'List teams with their eligibility',
  scope: 'read',
  input: Nothing,
  output: Type.Array(Team),
  run: ({ store }) => listTeams(store),
});

export const getTeamAction = action({
  name: 'teams.get',
  summary: 'One team with its eligibility',
  scope: 'read',
  input: Type.Object({ id: ManageId }, { additionalProperties: false }),
  output: Team,
  run: async ({ store }, i) => {
    const team = (await listTeams(store)).find((t) => t.id === i.id);
    if (!team) throw new AdminError('not_found', `no team ${i.id}`);
    return team;
  },
});

const TeamFlag = (flag: string) =>
  Type.Object({ id: ManageId, [flag]: Type.Boolean() }, { additionalProperties: false });

export const setTeamStateAction = action({
  name: 'teams.set_state',
  summary: "Set a team's state",
  scope: 'operate',
  input: Type.Object({ id: ManageId, state: StringEnum(TEAM_STATES) }, { additionalProperties: false }),
  output: Team,
  audit: { action: 'team.set_state', target: (i) => [i.id], details: (i) => ({ state: i.state }) },
  run: ({ store }, i) => changeTeam(store, i.id, { field: 'state', value: i.state }),
});

export const setTeamSectorAction = action({
  name: 'teams.set_sector',
  summary: 'Mark a team in a sensitive sector, or not',
  scope: 'operate',
  input: TeamFlag('sensitiveSector'),
  output: Team,
  audit: {
    action: 'team.set_sector',
    target: (i) => [i.id as string],
    details: (i) => ({ sensitiveSector: yesNo(i.sensitiveSector as boolean) }),
  },
  run: ({ store }, i) =>
    changeTeam(store, i.id as string, { field: 'sensitiveSector', value: i.sensitiveSector as boolean }),
});

export const setTeamLegalAction = action({
  name: 'teams.set_legal',
  summary: "Record whether a team's legal setup is done",
  scope: 'operate',
  input: TeamFlag('legalSetupDone'),
  output: Team,
  audit: {
    action: 'team.set_legal',
    target: (i) => [i.id as string],
    details: (i) => ({ legalSetupDone: yesNo(i.legalSetupDone as boolean) }),
  },
  run: ({ store }, i) =>
    changeTeam(store, i.id as string, { field: 'legalSetupDone', value: i.legalSetupDone as boolean }),
});

export const setTeamOrganizationAction = action({
  name: 'teams.set_org',
  summary: 'Move a team to an organization (null: outside any)',
  scope: 'operate',
  input: Type.Object(
    { id: ManageId, organization: Type.Union([ManageId, Type.Null()]) },
    { additionalProperties: false },
  ),
  output: Team,
  audit: {
    action: 'team.set_org',
    target: (i) => [i.id],
    details: (i) => ({ organization: i.organization ?? 'none' }),
  },
  run: ({ store }, i) => changeTeam(store, i.id, { field: 'organization', value: i.organization }),
});

export const setTeamHoldsDataAction = action({
  name: 'teams.set_holds_data',
  summary: 'State that a team holds data before its first lead, or withdraw it',
  scope: 'operate',
  input: TeamFlag('holdsData'),
  output: Team,
  audit: {
    action: 'team.set_holds_data',
    target: (i) => [i.id as string],
    details: (i) => ({ holdsData: yesNo(i.holdsData as boolean) }),
  },
  run: ({ store }, i) => setHoldsData(store, i.id as string, i.holdsData as boolean),
});

export const ORGANIZATION_ACTIONS: readonly Action[] = [
  listOrganizationsAction,
  createOrganizationAction,
  setPlanAction,
  listTeamsAction,
  getTeamAction,
  setTeamStateAction,
  setTeamSectorAction,
  setTeamLegalAction,
  setTeamOrganizationAction,
  setTeamHoldsDataAction,
];
