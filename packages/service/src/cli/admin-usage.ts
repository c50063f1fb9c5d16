import type { Command } from 'commander';
import { Redis } from 'ioredis';
import { createAccessControl, type UsageReport } from '../access/create-access-control.js';
import { getIntegration } from '../access/integrations.js';
import { readSwitches, setApiDisabled, setCapabilityDisabled } from '../access/switches.js';
import { systemClock } from '../clock.js';
import { DEFAULT_LIMITS } from '../config.js';
import { type CommonOptions, common, type OpenStore, parseFlag, run, table } from './admin-run.js';

// `admin integrations usage ID` reads the counters the API processes share through Redis (REDIS_URL).
// Without Redis each API process keeps its counters in its own memory, out of reach of this command.

type Usage = { integration: string } & (UsageReport | { shared: false; note: string });

export function registerUsageCommand(integrations: Command, open: OpenStore): void {
  common(integrations.command('usage <id>').description('items this minute, quota used today, failed attempts, locks'))
    .option('--redis <url>', 'Redis the API processes share (default: REDIS_URL)')
    .option('--redis-prefix <prefix>', 'key prefix of the API processes', 'crmx')
    .action((id: string, o: CommonOptions & { redis?: string; redisPrefix: string }) =>
      run(
        open,
        o,
        async (store): Promise<Usage> => {
          const integration = await getIntegration(store, systemClock, id);
          const url = o.redis ?? process.env.REDIS_URL;
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
            const access = createAccessControl({
              store,
              clock: systemClock,
              limits: DEFAULT_LIMITS,
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
              u.keys.map((k) => [
                k.id,
                `failed attempts ${k.failures}`,
                k.lockedUntil ? `locked until ${k.lockedUntil}` : 'not locked',
              ]),
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
    run(open, o, (store) => setApiDisabled(store, !parseFlag(state)), human),
  );
  common(
    switches
      .command('capability <endpoint> <state>')
      .description('off: the endpoint (e.g. leads.list) answers 403 capability_disabled'),
  ).action((endpoint: string, state: string, o: CommonOptions) =>
    run(open, o, (store) => setCapabilityDisabled(store, endpoint, !parseFlag(state)), human),
  );
}
