import type { Command } from 'commander';
import { changeAllowlist, createIntegration, listIntegrations, revokeIntegration } from '../access/integrations.js';
import { endOldKey, rollKey } from '../access/keys.js';
import { systemClock } from '../clock.js';
import { AdminError } from '../errors/admin-error.js';
import { ALLOWLIST_ACTIONS } from '../write/commands/access-commands.js';
import type { IntegrationSummary } from '../write/commands/integration-state.js';
import { GRACE_PERIODS, type GracePeriod } from '../write/commands/key-state.js';
import { type CommonOptions, common, confirmed, type OpenStore, run, table, yesOption } from './admin-run.js';
import { registerUsageCommand } from './admin-usage.js';

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
      run(
        open,
        o,
        async (store) => {
          const { integration, key } = await createIntegration(store, systemClock, {
            teams: splitList(o.teams),
            name: o.name,
            allowlist: o.allowlist ? splitList(o.allowlist) : [],
          });
          return { integration, key };
        },
        ({ integration, key }) => `${integrationLines([integration])}\nkey: ${key}\n${keyNotice}`,
        {
          action: 'integration.create',
          details: { name: o.name, teams: splitList(o.teams), allowlist: o.allowlist ? splitList(o.allowlist) : [] },
          // The key's lookup id (shown by `list`), never the key.
          fromResult: ({ integration }) => ({
            target: [integration.id],
            details: { keyIds: integration.keys.map((k) => k.id) },
          }),
        },
      ),
    );

  common(integrations.command('list').description('list integrations (never a key)'))
    .option('--parent <id>', 'only those of this organization (or team outside one)')
    .action((o: CommonOptions & { parent?: string }) =>
      run(open, o, (store) => listIntegrations(store, systemClock, o.parent), integrationLines),
    );

  yesOption(
    common(integrations.command('roll <id>').description('roll the key: the old one keeps working during its grace')),
  )
    .option('--grace <period>', `grace of the old key: ${GRACE_PERIODS.join(', ')}`, '24h')
    .option('--compromised', 'the old key leaked: revoke it now instead (irreversible: asks, or --yes)')
    .action((id: string, o: CommonOptions & { grace: string; compromised?: boolean; yes?: boolean }) => {
      const roll = () =>
        run(
          open,
          o,
          async (store) => {
            if (!GRACE_PERIODS.includes(o.grace as GracePeriod)) {
              throw new AdminError('invalid_argument', `--grace must be one of ${GRACE_PERIODS.join(', ')}`);
            }
            const rolled = await rollKey(store, systemClock, id, {
              grace: o.grace as GracePeriod,
              compromised: o.compromised ?? false,
            });
            return { integration: id, ...rolled };
          },
          (r) =>
            `key: ${r.key}\n${keyNotice}\nold key ${r.oldKeyId ?? '(none)'}: ${
              r.graceEndsAt ? `works until ${r.graceEndsAt}` : 'revoked'
            }`,
          {
            action: 'integration.roll',
            target: [id],
            details: { grace: o.grace, compromised: o.compromised ?? false },
            fromResult: (r) => ({
              details: { newKeyId: r.keyId, oldKeyId: r.oldKeyId, oldKeyGraceEndsAt: r.graceEndsAt },
            }),
          },
        );
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
      run(
        open,
        o,
        (store) => endOldKey(store, systemClock, id),
        (r) => `revoked ${r.revoked.join(', ')}`,
        {
          action: 'integration.end_old_key',
          target: [id],
          fromResult: (r) => ({ details: { revokedKeyIds: r.revoked } }),
        },
      ),
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
      run(
        open,
        o,
        (store) => revokeIntegration(store, systemClock, id),
        (i) => `${integrationLines([i])}\nrevoked: running servers refuse its keys within 5 seconds`,
        { action: 'integration.revoke', target: [id] },
      ),
    ),
  );

  const allowlist = integrations.command('allowlist').description('IP allowlist (empty: any address)');
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
        run(
          open,
          o,
          async (store) => ({ integration: id, allowlist: await changeAllowlist(store, id, action, list) }),
          (r) => (r.allowlist.length ? r.allowlist.join('\n') : '(empty: any address)'),
          {
            action: `allowlist.${action}`,
            target: [id],
            details: { entries: list },
            fromResult: (r) => ({ details: { allowlist: r.allowlist } }),
          },
        );
      // An empty set opens the integration to every address: the operator confirms it.
      return action === 'set' && list.length === 0
        ? confirmed(o, `an empty allowlist lets ${id} connect from every address`, change)
        : change();
    });
  }

  registerUsageCommand(integrations, open);
}

function splitList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
