import type { Command } from 'commander';
import {
  createOperatorToken,
  listOperatorTokens,
  parseScopes,
  revokeOperatorToken,
} from '../access/operator-tokens.js';
import { systemClock } from '../clock.js';
import type { OperatorTokenSummary } from '../write/commands/operator-token-state.js';
import { type CommonOptions, common, type OpenStore, run, table } from './admin-run.js';

// `crm-export admin tokens ...`: operator tokens of the internal listener (docs/internal-listener.md). Only
// `create` prints a token, once; the database keeps its digest.

const tokenNotice = 'Store this token now: it is shown only once.';

function tokenLines(list: readonly OperatorTokenSummary[]): string {
  return table(
    ['NAME', 'SCOPES', 'STATUS', 'ENDS IN', 'CREATED', 'LAST USED', 'FROM'],
    list.map((t) => [
      t.name,
      t.scopes.join(','),
      t.status,
      t.last4,
      t.createdAt,
      t.lastUsedAt ?? 'never',
      t.lastUsedFrom ?? '',
    ]),
  );
}

export function registerTokenCommands(admin: Command, open: OpenStore): void {
  const tokens = admin.command('tokens').description('operator tokens of the internal listener (intake, management)');

  common(tokens.command('create').description('create an operator token and print it once'))
    .requiredOption('--name <name>', 'unique name, the actor of what the token changes ([a-z0-9._-], up to 64)')
    .requiredOption('--scope <scopes>', 'comma separated: intake, read, keys, operate')
    .action((o: CommonOptions & { name: string; scope: string }) =>
      run(
        open,
        o,
        async (store) => {
          const { token, summary } = await createOperatorToken(store, systemClock, {
            name: o.name,
            scopes: parseScopes(o.scope),
          });
          return { ...summary, token };
        },
        (created) => `${tokenLines([created])}\ntoken: ${created.token}\n${tokenNotice}`,
        {
          action: 'operator_token.create',
          target: [o.name],
          details: { scopes: o.scope.split(',').map((s) => s.trim()) },
          // The lookup id, never the token.
          fromResult: (created) => ({ details: { tokenId: created.id } }),
        },
      ),
    );

  common(tokens.command('list').description('list operator tokens (never a token)')).action((o: CommonOptions) =>
    run(open, o, listOperatorTokens, tokenLines),
  );

  common(
    tokens.command('revoke <name>').description('revoke the active token of that name (refused within 5 s)'),
  ).action((name: string, o: CommonOptions) =>
    run(
      open,
      o,
      (store) => revokeOperatorToken(store, systemClock, name),
      (revoked) => tokenLines([revoked]),
      { action: 'operator_token.revoke', target: [name], fromResult: (t) => ({ details: { tokenId: t.id } }) },
    ),
  );
}
