import type { Command } from 'commander';
import { ENDPOINT_NAMES } from '../access/endpoints.js';
import {
  clearSandbox,
  holdNotReady,
  type IntegrationFault,
  parseDuration,
  refuseCursors,
  removeRecord,
  setTeamCapability,
  showSandbox,
  spendIntegration,
} from '../access/sandbox.js';
import { systemClock } from '../clock.js';
import { REMOVAL_REASONS } from '../schemas/enums.js';
import { readLimits } from '../settings/read-limits.js';
import { type CommonOptions, common, type OpenStore, parseFlag, run } from './admin-run.js';

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

  for (const [name, refusal] of [
    ['expire-cursors', 'sync_cursor_expired'],
    ['require-resync', 'resync_required'],
  ] as const) {
    teamCommand(
      sandbox,
      name,
      refusal === 'sync_cursor_expired'
        ? 'every feed cursor of the team issued so far gets 410 sync_cursor_expired'
        : 'every feed cursor of the team issued so far gets 409 resync_required',
    ).action((o: TeamOptions) =>
      run(
        open,
        o,
        (store) => refuseCursors(store, o.team, refusal),
        (r) => `${r.team}: cursors issued so far now get ${refusal}; the consumer resyncs on its next read`,
        { action: `sandbox.${name.replace('-', '_')}`, target: [o.team] },
      ),
    );
  }

  teamCommand(sandbox, 'not-ready', "the team's data answers 409 capture_not_ready for a while")
    .option('--for <duration>', 'how long: 30s, 5m, 2h', '5m')
    .action((o: TimedOptions) =>
      run(
        open,
        o,
        (store) => holdNotReady(store, systemClock, o.team, parseDuration(o.for ?? '5m')),
        (r) => `${r.team}: answers 409 capture_not_ready until ${r.notReadyUntil}`,
        { action: 'sandbox.not_ready', target: [o.team], details: { for: o.for } },
      ),
    );

  const faults: [string, IntegrationFault, string, string][] = [
    ['spend-rate', 'rate_limited', 'the rate window', "the integration's rate allowance is spent: 429 rate_limited"],
    ['spend-quota', 'quota_exceeded', '00:00 UTC', "the integration's daily quota is spent: 429 quota_exceeded"],
    ['lock-key', 'locked', 'the lock length', "the integration's keys are locked out: 429 rate_limited"],
  ];
  for (const [name, fault, until, description] of faults) {
    teamCommand(sandbox, name, description)
      .requiredOption('--integration <id>', 'an example integration reading the team')
      .option('--for <duration>', `how long: 30s, 5m, 2h (default: until ${until})`)
      .action((o: IntegrationOptions) =>
        run(
          open,
          o,
          (store) =>
            spendIntegration(
              store,
              systemClock,
              readLimits(),
              o.team,
              o.integration,
              fault,
              o.for === undefined ? undefined : parseDuration(o.for),
            ),
          (r) => `${r.integration}: answers 429 ${fault === 'locked' ? 'rate_limited' : fault} until ${r.until}`,
          {
            action: `sandbox.${name.replace('-', '_')}`,
            target: [o.team, o.integration],
            details: o.for === undefined ? {} : { for: o.for },
          },
        ),
      );
  }

  teamCommand(sandbox, 'capability <endpoint> <off>', `switch an endpoint off for the team only (yes|no)`)
    .addHelpText('after', `\nEndpoints: ${ENDPOINT_NAMES.join(', ')}`)
    .action((endpoint: string, off: string, o: TeamOptions) =>
      run(
        open,
        o,
        (store) => setTeamCapability(store, o.team, endpoint, parseFlag(off)),
        (r) => `${r.team}: endpoints off: ${r.capabilitiesOff.length ? r.capabilitiesOff.join(', ') : '(none)'}`,
        { action: 'sandbox.capability', target: [o.team], details: { endpoint, off } },
      ),
    );

  for (const how of REMOVAL_REASONS) {
    const name = how === 'erased' ? 'erase' : 'delete';
    teamCommand(sandbox, name, `${name} one record of the team through the write side (its removal enters the feed)`)
      .requiredOption('--record <id>', 'lead_..., call_..., conversation_... or booking_... (delete only)')
      .action((o: TeamOptions & { record: string }) =>
        run(
          open,
          o,
          (store) => removeRecord(store, systemClock, o.team, o.record, how),
          (r) => `${r.record}: ${r.removed}`,
          { action: `sandbox.${name}`, target: [o.team, o.record] },
        ),
      );
  }

  teamCommand(sandbox, 'clear', 'end every timed fault and endpoint switch of the team (cursor refusals stay)').action(
    (o: TeamOptions) =>
      run(
        open,
        o,
        (store) => clearSandbox(store, o.team),
        (r) => `${r.team}: sandbox faults cleared (integrations: ${r.integrations.join(', ') || 'none'})`,
        { action: 'sandbox.clear', target: [o.team], fromResult: (r) => ({ target: r.integrations }) },
      ),
  );

  teamCommand(sandbox, 'show', 'the sandbox state of the team and its integrations').action((o: TeamOptions) =>
    run(
      open,
      o,
      (store) => showSandbox(store, o.team),
      (r) => JSON.stringify(r, null, 2),
    ),
  );
}
