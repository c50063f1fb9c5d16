import type { Command } from 'commander';
import { Redis } from 'ioredis';
import { ENDPOINT_NAMES, isEndpointName } from '../access/endpoints.js';
import { getIntegration } from '../access/integrations.js';
import { StoreAccessControl, type UsageReport } from '../access/store-access-control.js';
import { readSwitches, setApiDisabled, setCapabilityDisabled } from '../access/switches.js';
import { systemClock } from '../clock.js';
import { AdminError } from '../errors/admin-error.js';
import { readLimits } from '../settings/read-limits.js';
import { readSetting, settingOption } from '../settings/read-setting.js';
import { type CommonOptions, common, type OpenStore, parseFlag, refuse, run, table } from './admin-run.js';

// `admin integrations usage ID` reads the counters the API processes share through Redis (REDIS_URL).
// Without Redis each API process keeps its counters in its own memory, out of reach of this command.

type Usage = { integration: string } & (UsageReport | { shared: false; note: string });

export function registerUsageCommand(integrations: Command, open: OpenStore): void {
  common(integrations.command('usage <id>').description('items this minute, quota used today, failed attempts, locks'))
    .addOption(settingOption('redisUrl', 'Redis the API processes share'))
    .addOption(settingOption('redisPrefix'))
    .action((id: string, o: CommonOptions & { redis?: string; redisPrefix: string }) =>
      run(
        open,
        o,
        async (store): Promise<Usage> => {
          const integration = await getIntegration(store, systemClock, id);
          const url = readSetting('redisUrl', o.redis);
          if (!url) {
            return {
              integration: id,
              shared: false,
              note: 'no REDIS_URL: each API process keeps its counters in its own memory',
            };
          }
          const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true });
          try {
            await redis.connect();
            const access = new StoreAccessControl({
              store,
              clock: systemClock,
              limits: readLimits(),
              redis,
              redisPrefix: o.redisPrefix,
            });
            const report = await access.usage(
              id,
              integration.keys.map((k) => k.id),
            );
            return { integration: id, ...report };
          } finally {
            redis.disconnect();
          }
        },
        (u) => {
          if (!('itemsThisMinute' in u)) return `${u.integration}: ${u.note}`;
          return [
            `items this minute: ${u.itemsThisMinute}`,
            `read requests this minute: ${u.readsThisMinute}`,
            `quota used today (UTC): ${u.quotaUsedToday}`,
            table(
              ['KEY', 'FAILED ATTEMPTS', 'LOCKED UNTIL'],
              u.keys.map((k) => [k.id, String(k.failures), k.lockedUntil ?? 'not locked']),
            ),
          ].join('\n');
        },
      ),
    );
}

/** `admin switches`: the operator switches every API process reads within a few seconds. */
export function registerSwitchCommands(admin: Command, open: OpenStore): void {
  const switches = admin.command('switches').description('operator switches: api_disabled, capability_disabled');
  const human = (s: Awaited<ReturnType<typeof readSwitches>>) =>
    `api: ${s.apiDisabled ? 'disabled (503 api_disabled)' : 'on'}\ndisabled endpoints: ${s.capabilitiesDisabled.join(', ') || '(none)'}`;
  common(switches.command('list').description('show the switches')).action((o: CommonOptions) =>
    run(open, o, readSwitches, human),
  );
  common(
    switches.command('api <state>').description('on: answer; off: every endpoint answers 503 api_disabled'),
  ).action((state: string, o: CommonOptions) =>
    run(open, o, (store) => setApiDisabled(store, !parseFlag(state)), human, {
      action: 'switch.api',
      target: ['api'],
      details: { state },
    }),
  );
  common(
    switches
      .command('capability <endpoint> <state>')
      .description(`off: the endpoint answers 403 capability_disabled (${ENDPOINT_NAMES.join(', ')})`),
  ).action((endpoint: string, state: string, o: CommonOptions) => {
    // Checked before the database is opened: an unknown name would switch nothing off.
    if (!isEndpointName(endpoint)) {
      refuse(
        o,
        new AdminError(
          'invalid_argument',
          `unknown endpoint ${JSON.stringify(endpoint)}: NAME must be one of ${ENDPOINT_NAMES.join(', ')}`,
        ),
      );
      return;
    }
    return run(open, o, (store) => setCapabilityDisabled(store, endpoint, !parseFlag(state)), human, {
      action: 'switch.capability',
      target: [endpoint],
      details: { state },
    });
  });
}
