import type { Command } from 'commander';
import { ENDPOINT_NAMES, isEndpointName } from '../access/endpoints.js';
import type { IntegrationFault } from '../access/sandbox.js';
import { AdminError } from '../errors/admin-error.js';
import type { AnyAction } from '../manage/action.js';
import {
  clearSandboxAction,
  deleteAction,
  eraseAction,
  expireCursorsAction,
  lockKeyAction,
  notReadyAction,
  requireResyncAction,
  showSandboxAction,
  spendQuotaAction,
  spendRateAction,
  teamCapabilityAction,
} from '../manage/actions/operate.js';
import { type CommonOptions, common, type OpenStore, parseFlag, runAction } from './admin-run.js';

// `crm-export admin sandbox ...`: fault switches on example teams (livemode false), so a consumer can be
// tested against the real service (docs/testing-your-consumer.md). A live team is refused (`live_team`).

interface TeamOptions extends CommonOptions {
  team: string;
}
interface TimedOptions extends TeamOptions {
  for?: string;
}
interface IntegrationOptions extends TimedOptions {
  integration: string;
}

const teamCommand = (parent: Command, name: string, description: string): Command =>
  common(parent.command(name).description(description)).requiredOption('--team <id>', 'the example team');

export function registerSandboxCommands(admin: Command, open: OpenStore): void {
  const sandbox = admin
    .command('sandbox')
    .description('fault switches on example teams, to test a consumer (docs/testing-your-consumer.md)');

  for (const [name, action, refusal] of [
    ['expire-cursors', expireCursorsAction, 'sync_cursor_expired'],
    ['require-resync', requireResyncAction, 'resync_required'],
  ] as const) {
    teamCommand(
      sandbox,
      name,
      refusal === 'sync_cursor_expired'
        ? 'every feed cursor of the team issued so far gets 410 sync_cursor_expired'
        : 'every feed cursor of the team issued so far gets 409 resync_required',
    ).action((o: TeamOptions) =>
      runAction<{ team: string }>(open, o, action, {
        input: () => ({ team: o.team }),
        human: (r) => `${r.team}: cursors issued so far now get ${refusal}; the consumer resyncs on its next read`,
        target: [o.team],
      }),
    );
  }

  teamCommand(sandbox, 'not-ready', "the team's data answers 409 capture_not_ready for a while")
    .option('--for <duration>', 'how long: 30s, 5m, 2h', '5m')
    .action((o: TimedOptions) =>
      runAction<{ team: string; notReadyUntil: string }>(open, o, notReadyAction, {
        input: () => ({ team: o.team, for: o.for ?? '5m' }),
        human: (r) => `${r.team}: answers 409 capture_not_ready until ${r.notReadyUntil}`,
        target: [o.team],
      }),
    );

  const faults: [string, AnyAction, IntegrationFault, string, string][] = [
    [
      'spend-rate',
      spendRateAction,
      'rate_limited',
      'the rate window',
      "the integration's rate allowance is spent: 429 rate_limited",
    ],
    [
      'spend-quota',
      spendQuotaAction,
      'quota_exceeded',
      '00:00 UTC',
      "the integration's daily quota is spent: 429 quota_exceeded",
    ],
    ['lock-key', lockKeyAction, 'locked', 'the lock length', "the integration's keys are locked out: 429 rate_limited"],
  ];
  for (const [name, action, fault, until, description] of faults) {
    teamCommand(sandbox, name, description)
      .requiredOption('--integration <id>', 'an example integration reading the team')
      .option('--for <duration>', `how long: 30s, 5m, 2h (default: until ${until})`)
      .action((o: IntegrationOptions) =>
        runAction<{ integration: string; until: string }>(open, o, action, {
          input: () => ({ team: o.team, integration: o.integration, ...(o.for === undefined ? {} : { for: o.for }) }),
          human: (r) => `${r.integration}: answers 429 ${fault === 'locked' ? 'rate_limited' : fault} until ${r.until}`,
          target: [o.team, o.integration],
        }),
      );
  }

  teamCommand(sandbox, 'capability <endpoint> <off>', `switch an endpoint off for the team only (yes|no)`)
    .addHelpText('after', `\nEndpoints: ${ENDPOINT_NAMES.join(', ')}`)
    .action((endpoint: string, off: string, o: TeamOptions) =>
      runAction<{ team: string; capabilitiesOff: string[] }>(open, o, teamCapabilityAction, {
        input: () => {
          if (!isEndpointName(endpoint))
            throw new AdminError(
              'invalid_argument',
              `unknown endpoint ${endpoint} (known: ${ENDPOINT_NAMES.join(', ')})`,
            );
          return { team: o.team, endpoint, off: parseFlag(off) };
        },
        human: (r) => `${r.team}: endpoints off: ${r.capabilitiesOff.length ? r.capabilitiesOff.join(', ') : '(none)'}`,
        target: [o.team],
      }),
    );

  for (const [name, action] of [
    ['erase', eraseAction],
    ['delete', deleteAction],
  ] as const) {
    teamCommand(sandbox, name, `${name} one record of the team through the write side (its removal enters the feed)`)
      .requiredOption('--record <id>', 'lead_..., call_..., conversation_... or booking_... (delete only)')
      .action((o: TeamOptions & { record: string }) =>
        runAction<{ record: string; removed: string }>(open, o, action, {
          input: () => ({ team: o.team, record: o.record }),
          human: (r) => `${r.record}: ${r.removed}`,
          target: [o.team, o.record],
        }),
      );
  }

  teamCommand(sandbox, 'clear', 'end every timed fault and endpoint switch of the team (cursor refusals stay)').action(
    (o: TeamOptions) =>
      runAction<{ team: string; integrations: string[] }>(open, o, clearSandboxAction, {
        input: () => ({ team: o.team }),
        human: (r) => `${r.team}: sandbox faults cleared (integrations: ${r.integrations.join(', ') || 'none'})`,
        target: [o.team],
      }),
  );

  teamCommand(sandbox, 'show', 'the sandbox state of the team and its integrations').action((o: TeamOptions) =>
    runAction(open, o, showSandboxAction, {
      input: () => ({ team: o.team }),
      human: (r) => JSON.stringify(r, null, 2),
    }),
  );
}
