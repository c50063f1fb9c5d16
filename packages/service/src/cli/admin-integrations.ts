import type { Command } from 'commander';
import { AdminError } from '../errors/admin-error.js';
import {
  addAllowlistAction,
  checkAllowlistAction,
  createIntegrationAction,
  endOldKeyAction,
  listIntegrationsAction,
  removeAllowlistAction,
  revokeIntegrationAction,
  rollKeyAction,
  setAllowlistAction,
} from '../manage/actions/integrations.js';
import { ALLOWLIST_ACTIONS } from '../write/commands/access-commands.js';
import type { IntegrationSummary } from '../write/commands/integration-state.js';
import { GRACE_PERIODS, type GracePeriod } from '../write/commands/key-state.js';
import { type CommonOptions, common, confirmed, type OpenStore, runAction, table, yesOption } from './admin-run.js';
import { registerLockoutCommands, registerRequestLogCommands, registerUsageCommand } from './admin-usage.js';

// `crm-export admin integrations ...`. Only `create` and `roll` print a key (field `key` with --json).

const keyNotice = 'Store this key now: it is shown only once.';

function integrationLines(list: readonly IntegrationSummary[]): string {
  return table(
    ['ID', 'NAME', 'STATUS', 'TEAMS', 'ALLOWLIST', 'KEYS'],
    list.map((i) => [
      i.id,
      i.name,
      i.status,
      i.teams.join(','),
      i.allowlist.length ? i.allowlist.join(',') : 'any address',
      i.keys
        .map((k) => `${k.id}…${k.last4}:${k.status}${k.graceEndsAt && k.status === 'grace' ? `→${k.graceEndsAt}` : ''}`)
        .join(' '),
    ]),
  );
}

export function registerIntegrationCommands(admin: Command, open: OpenStore): void {
  const integrations = admin.command('integrations').description('integrations and their keys');

  common(integrations.command('create').description('create an integration and print its first key'))
    .requiredOption('--teams <ids>', 'team ids, comma separated (teams of one organization)')
    .requiredOption('--name <name>', 'name shown by /me')
    .option('--allowlist <entries>', 'IPv4 addresses or CIDR ranges, comma separated')
    .action((o: CommonOptions & { teams: string; name: string; allowlist?: string }) =>
      runAction<{ integration: IntegrationSummary; key: string }>(open, o, createIntegrationAction, {
        input: () => ({
          teams: splitList(o.teams),
          name: o.name,
          allowlist: o.allowlist ? splitList(o.allowlist) : [],
        }),
        human: ({ integration, key }) => `${integrationLines([integration])}\nkey: ${key}\n${keyNotice}`,
      }),
    );

  common(integrations.command('list').description('list integrations (never a key)'))
    .option('--parent <id>', 'only those of this organization (or team outside one)')
    .action((o: CommonOptions & { parent?: string }) =>
      runAction(open, o, listIntegrationsAction, {
        input: () => (o.parent ? { parent: o.parent } : {}),
        human: integrationLines,
      }),
    );

  yesOption(
    common(integrations.command('roll <id>').description('roll the key: the old one keeps working during its grace')),
  )
    .option('--grace <period>', `grace of the old key: ${GRACE_PERIODS.join(', ')}`, '24h')
    .option('--compromised', 'the old key leaked: revoke it now instead (irreversible: asks, or --yes)')
    .action((id: string, o: CommonOptions & { grace: string; compromised?: boolean; yes?: boolean }) => {
      const roll = () =>
        runAction<{ key: string; oldKeyId: string | null; graceEndsAt: string | null }>(open, o, rollKeyAction, {
          input: () => {
            if (!GRACE_PERIODS.includes(o.grace as GracePeriod)) {
              throw new AdminError('invalid_argument', `--grace must be one of ${GRACE_PERIODS.join(', ')}`);
            }
            return { id, grace: o.grace, compromised: o.compromised ?? false };
          },
          human: (r) =>
            `key: ${r.key}\n${keyNotice}\nold key ${r.oldKeyId ?? '(none)'}: ${
              r.graceEndsAt ? `works until ${r.graceEndsAt}` : 'revoked'
            }`,
          target: [id],
        });
      return o.compromised
        ? confirmed(o, `the current key of ${id} is revoked at once, which cannot be undone`, roll)
        : roll();
    });

  yesOption(
    common(
      integrations
        .command('end-old-key <id>')
        .description('end the grace period of the old key now (irreversible: asks, or --yes)'),
    ),
  ).action((id: string, o: CommonOptions & { yes?: boolean }) =>
    confirmed(o, `the old key of ${id} is revoked now, which cannot be undone`, () =>
      runAction<{ revoked: string[] }>(open, o, endOldKeyAction, {
        input: () => ({ id }),
        human: (r) => `revoked ${r.revoked.join(', ')}`,
        target: [id],
      }),
    ),
  );

  yesOption(
    common(
      integrations
        .command('revoke <id>')
        .description('revoke the integration and all its keys (irreversible: asks, or --yes)'),
    ),
  ).action((id: string, o: CommonOptions & { yes?: boolean }) =>
    confirmed(o, `integration ${id} and all its keys are revoked, which cannot be undone`, () =>
      runAction<IntegrationSummary>(open, o, revokeIntegrationAction, {
        input: () => ({ id }),
        human: (i) => `${integrationLines([i])}\nrevoked: running servers refuse its keys within 5 seconds`,
        target: [id],
      }),
    ),
  );

  const allowlist = integrations.command('allowlist').description('IP allowlist (empty: any address)');
  const changes = { set: setAllowlistAction, add: addAllowlistAction, remove: removeAllowlistAction };
  for (const action of ALLOWLIST_ACTIONS) {
    const command = common(
      allowlist
        .command(`${action} <id> [entries...]`)
        .description(
          action === 'set'
            ? 'set IPv4 addresses or CIDR ranges (none: any address, which asks, or --yes)'
            : `${action} IPv4 addresses or CIDR ranges`,
        ),
    );
    if (action === 'set') yesOption(command);
    command.action((id: string, entries: string[], o: CommonOptions & { yes?: boolean }) => {
      const list = entries.flatMap(splitList);
      const change = () =>
        runAction<{ allowlist: string[] }>(open, o, changes[action], {
          input: () => ({ id, entries: list }),
          human: (r) => (r.allowlist.length ? r.allowlist.join('\n') : '(empty: any address)'),
          target: [id],
        });
      // An empty set opens the integration to every address: the operator confirms it.
      return action === 'set' && list.length === 0
        ? confirmed(o, `an empty allowlist lets ${id} connect from every address`, change)
        : change();
    });
  }
  common(
    allowlist.command('check <id> <address>').description('would a request from ADDRESS pass the allowlist?'),
  ).action((id: string, address: string, o: CommonOptions) =>
    runAction<{ allowed: boolean; matchedBy: string | null }>(open, o, checkAllowlistAction, {
      input: () => ({ id, address }),
      human: (r) =>
        r.allowed
          ? `${address} passes${r.matchedBy ? ` (${r.matchedBy})` : ' (empty allowlist: any address)'}`
          : `${address} is refused (403 ip_not_allowed)`,
    }),
  );

  registerUsageCommand(integrations, open);
  registerLockoutCommands(admin, open);
  registerRequestLogCommands(admin, integrations, open);
}

function splitList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
