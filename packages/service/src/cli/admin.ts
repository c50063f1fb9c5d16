import type { Command } from 'commander';
import type { TeamSummary } from '../access/organizations.js';
import { AdminError } from '../errors/admin-error.js';
import type { AnyAction } from '../manage/action.js';
import {
  createOrganizationAction,
  listOrganizationsAction,
  listTeamsAction,
  setPlanAction,
  setTeamHoldsDataAction,
  setTeamLegalAction,
  setTeamOrganizationAction,
  setTeamSectorAction,
  setTeamStateAction,
} from '../manage/actions/organizations.js';
import { ORGANIZATION_PLANS, TEAM_STATES, type TeamStateValue } from '../schemas/enums.js';
import type { OrganizationSummary } from '../write/commands/access-commands.js';
import { registerAuditCommands } from './admin-audit.js';
import { registerIntakeCommands } from './admin-intake.js';
import { registerIntegrationCommands } from './admin-integrations.js';
import { type CommonOptions, common, type OpenStore, parseFlag, runAction, table } from './admin-run.js';
import { registerSandboxCommands } from './admin-sandbox.js';
import { registerTokenCommands } from './admin-tokens.js';
import { registerSwitchCommands } from './admin-usage.js';

// `crm-export admin`: the operator's side of access control (organizations, team eligibility, integrations
// and keys). A key is printed only by `integrations create` and `integrations roll`.

const ORG_HEADER = ['ID', 'NAME', 'PLAN', 'API AGREED'];
const orgLine = (o: OrganizationSummary): string[] => [o.id, o.name, o.plan, o.apiAgreed ? 'yes' : 'no'];
const orgTable = (list: readonly OrganizationSummary[]) => table(ORG_HEADER, list.map(orgLine));
const TEAM_HEADER = ['ID', 'ORGANIZATION', 'STATE', 'LEGAL SETUP', 'SECTOR', 'DATA', 'MODE'];
const teamTable = (list: readonly TeamSummary[]) => table(TEAM_HEADER, list.map(teamLine));
const teamLine = (t: TeamSummary): string[] => [
  t.id,
  t.organization ?? '(no organization)',
  t.state,
  t.legalSetupDone ? 'legal done' : 'legal pending',
  t.sensitiveSector ? 'sensitive' : 'ordinary',
  t.holdsData ? 'holds data' : 'no data',
  t.livemode ? 'live' : 'example',
];

function oneOf<T extends string>(values: readonly T[], what: string) {
  return (value: string): T => {
    if (!values.includes(value as T))
      throw new AdminError('invalid_argument', `${what} must be one of ${values.join(', ')}`);
    return value as T;
  };
}

export function registerAdminCommands(program: Command, open: OpenStore): void {
  const admin = program
    .command('admin')
    .description('operator commands: organizations, teams, integrations, keys, audit trail');

  const orgs = admin.command('orgs').description('organizations and their plan');
  common(orgs.command('create <name>').description('create an organization'))
    .option('--id <id>', 'organization id (default: generated)')
    .option('--plan <plan>', `plan: ${ORGANIZATION_PLANS.join(', ')}`, 'api_included')
    .option('--api-agreed', 'API access agreed outside the plan')
    .action((name: string, o: CommonOptions & { id?: string; plan: string; apiAgreed?: boolean }) =>
      runAction<OrganizationSummary>(open, o, createOrganizationAction, {
        input: () => ({
          name,
          plan: oneOf(ORGANIZATION_PLANS, 'plan')(o.plan),
          apiAgreed: o.apiAgreed ?? false,
          ...(o.id ? { id: o.id } : {}),
        }),
        human: (org) => orgTable([org]),
        target: o.id ? [o.id] : [],
      }),
    );
  common(orgs.command('list').description('list organizations')).action((o: CommonOptions) =>
    runAction(open, o, listOrganizationsAction, { input: () => ({}), human: orgTable }),
  );
  common(orgs.command('set-plan <org> <plan>').description(`set the plan (${ORGANIZATION_PLANS.join(', ')})`))
    .option('--api-agreed <yes|no>', 'API access agreed outside the plan')
    .action((org: string, plan: string, o: CommonOptions & { apiAgreed?: string }) =>
      runAction<OrganizationSummary>(open, o, setPlanAction, {
        input: () => ({
          id: org,
          plan: oneOf(ORGANIZATION_PLANS, 'plan')(plan),
          ...(o.apiAgreed !== undefined ? { apiAgreed: parseFlag(o.apiAgreed) } : {}),
        }),
        human: (result) => orgTable([result]),
        target: [org],
      }),
    );

  const teams = admin.command('teams').description('team eligibility: state, sector, legal setup, organization');
  common(teams.command('list').description('list teams with their eligibility')).action((o: CommonOptions) =>
    runAction(open, o, listTeamsAction, { input: () => ({}), human: teamTable }),
  );
  const teamChange = (team: string, o: CommonOptions, action: AnyAction, input: () => unknown) =>
    runAction<TeamSummary>(open, o, action, { input, human: (t) => teamTable([t]), target: [team] });
  common(teams.command('set-state <team> <state>').description(`set the state (${TEAM_STATES.join(', ')})`)).action(
    (team: string, state: string, o: CommonOptions) =>
      teamChange(team, o, setTeamStateAction, () => ({
        id: team,
        state: oneOf<TeamStateValue>(TEAM_STATES, 'state')(state),
      })),
  );
  common(
    teams.command('set-sector <team> <sensitive>').description('mark the team in a sensitive sector (yes|no)'),
  ).action((team: string, value: string, o: CommonOptions) =>
    teamChange(team, o, setTeamSectorAction, () => ({ id: team, sensitiveSector: parseFlag(value) })),
  );
  common(teams.command('set-legal <team> <done>').description('legal setup completed (yes|no)')).action(
    (team: string, value: string, o: CommonOptions) =>
      teamChange(team, o, setTeamLegalAction, () => ({ id: team, legalSetupDone: parseFlag(value) })),
  );
  common(
    teams.command('set-org <team> <org>').description('move the team to an organization ("none": outside any)'),
  ).action((team: string, org: string, o: CommonOptions) =>
    teamChange(team, o, setTeamOrganizationAction, () => ({ id: team, organization: org === 'none' ? null : org })),
  );
  common(
    teams
      .command('set-holds-data <team> <holds>')
      .description('state that the team holds data before its first lead (yes|no)'),
  ).action((team: string, value: string, o: CommonOptions) =>
    teamChange(team, o, setTeamHoldsDataAction, () => ({ id: team, holdsData: parseFlag(value) })),
  );

  registerIntegrationCommands(admin, open);
  registerIntakeCommands(admin, open);
  registerSwitchCommands(admin, open);
  registerAuditCommands(admin, open);
  registerSandboxCommands(admin, open);
  registerTokenCommands(admin, open);
}
