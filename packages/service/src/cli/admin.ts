import type { Command } from 'commander';
import { AdminError } from '../access/admin-error.js';
import { ORGANIZATION_PLANS, type OrganizationPlan, TEAM_STATES, type TeamStateValue } from '../access/eligibility.js';
import {
  changeTeam,
  createOrganization,
  listOrganizations,
  listTeams,
  type OrganizationSummary,
  setHoldsData,
  setOrganizationPlan,
  type TeamSummary,
} from '../access/organizations.js';
import { registerIntegrationCommands } from './admin-integrations.js';
import { type CommonOptions, common, type OpenStore, parseFlag, run, table } from './admin-run.js';
import { registerSwitchCommands } from './admin-usage.js';

// `crm-export admin`: the operator's side of access control (organizations, team eligibility, integrations
// and keys). A key is printed only by `integrations create` and `integrations roll`.

const orgLine = (o: OrganizationSummary): string[] => [o.id, o.name, o.plan, o.apiAgreed ? 'api agreed' : ''];
const teamLine = (t: TeamSummary): string[] => [
  t.id,
  t.organization ?? '(no organization)',
  t.state,
  t.legalSetupDone ? 'legal done' : 'legal pending',
  t.sensitiveSector ? 'sensitive' : '',
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
  const admin = program.command('admin').description('operator commands: organizations, teams, integrations, keys');

  const orgs = admin.command('orgs').description('organizations and their plan');
  common(orgs.command('create <name>').description('create an organization'))
    .option('--id <id>', 'organization id (default: generated)')
    .option('--plan <plan>', `plan: ${ORGANIZATION_PLANS.join(', ')}`, 'api_included')
    .option('--api-agreed', 'API access agreed outside the plan')
    .action((name: string, o: CommonOptions & { id?: string; plan: string; apiAgreed?: boolean }) =>
      run(
        open,
        o,
        (store) =>
          createOrganization(store, {
            name,
            plan: oneOf(ORGANIZATION_PLANS, 'plan')(o.plan),
            apiAgreed: o.apiAgreed ?? false,
            ...(o.id ? { id: o.id } : {}),
          }),
        (org) => table([orgLine(org)]),
      ),
    );
  common(orgs.command('list').description('list organizations')).action((o: CommonOptions) =>
    run(open, o, listOrganizations, (list) => table(list.map(orgLine))),
  );
  common(orgs.command('set-plan <org> <plan>').description(`set the plan (${ORGANIZATION_PLANS.join(', ')})`))
    .option('--api-agreed <yes|no>', 'API access agreed outside the plan')
    .action((org: string, plan: string, o: CommonOptions & { apiAgreed?: string }) =>
      run(
        open,
        o,
        (store) => {
          const change: { plan: OrganizationPlan; apiAgreed?: boolean } = {
            plan: oneOf(ORGANIZATION_PLANS, 'plan')(plan),
          };
          if (o.apiAgreed !== undefined) change.apiAgreed = parseFlag(o.apiAgreed);
          return setOrganizationPlan(store, org, change);
        },
        (result) => table([orgLine(result)]),
      ),
    );

  const teams = admin.command('teams').description('team eligibility: state, sector, legal setup, organization');
  common(teams.command('list').description('list teams with their eligibility')).action((o: CommonOptions) =>
    run(open, o, listTeams, (list) => table(list.map(teamLine))),
  );
  common(teams.command('set-state <team> <state>').description(`set the state (${TEAM_STATES.join(', ')})`)).action(
    (team: string, state: string, o: CommonOptions) =>
      run(
        open,
        o,
        (store) =>
          changeTeam(store, team, { field: 'state', value: oneOf<TeamStateValue>(TEAM_STATES, 'state')(state) }),
        (t) => table([teamLine(t)]),
      ),
  );
  common(
    teams.command('set-sector <team> <sensitive>').description('mark the team in a sensitive sector (yes|no)'),
  ).action((team: string, value: string, o: CommonOptions) =>
    run(
      open,
      o,
      (store) => changeTeam(store, team, { field: 'sensitiveSector', value: parseFlag(value) }),
      (t) => table([teamLine(t)]),
    ),
  );
  common(teams.command('set-legal <team> <done>').description('legal setup completed (yes|no)')).action(
    (team: string, value: string, o: CommonOptions) =>
      run(
        open,
        o,
        (store) => changeTeam(store, team, { field: 'legalSetupDone', value: parseFlag(value) }),
        (t) => table([teamLine(t)]),
      ),
  );
  common(
    teams.command('set-org <team> <org>').description('move the team to an organization ("none": outside any)'),
  ).action((team: string, org: string, o: CommonOptions) =>
    run(
      open,
      o,
      (store) => changeTeam(store, team, { field: 'organization', value: org === 'none' ? null : org }),
      (t) => table([teamLine(t)]),
    ),
  );
  common(
    teams
      .command('set-holds-data <team> <holds>')
      .description('state that the team holds data before its first lead (yes|no)'),
  ).action((team: string, value: string, o: CommonOptions) =>
    run(
      open,
      o,
      (store) => setHoldsData(store, team, parseFlag(value)),
      (t) => table([teamLine(t)]),
    ),
  );

  registerIntegrationCommands(admin, open);
  registerSwitchCommands(admin, open);
}
