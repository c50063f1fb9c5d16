import type { Command } from 'commander';
import { Redis } from 'ioredis';
import { ENDPOINT_NAMES, isEndpointName } from '../access/endpoints.js';
import { getIntegration } from '../access/integrations.js';
import { StoreAccessControl, type UsageReport } from '../access/store-access-control.js';
import type { Switches } from '../access/switches.js';
import { systemClock } from '../clock.js';
import { AdminError } from '../errors/admin-error.js';
import type { ManageContext } from '../manage/action.js';
import { listAddressLockoutsAction, listLockoutsAction, unlockAction } from '../manage/actions/integrations.js';
import { readSwitchesAction, setApiSwitchAction, setCapabilitySwitchAction } from '../manage/actions/operate.js';
import { failuresAction, requestsAction } from '../manage/actions/usage.js';
import { readLimits } from '../settings/read-limits.js';
import { readSetting, settingOption } from '../settings/read-setting.js';
import { type CommonOptions, common, type OpenStore, parseFlag, refuse, run, runAction, table } from './admin-run.js';

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
  const human = (s: Switches) =>
    `api: ${s.apiDisabled ? 'disabled (503 api_disabled)' : 'on'}\ndisabled endpoints: ${s.capabilitiesDisabled.join(', ') || '(none)'}`;
  common(switches.command('list').description('show the switches')).action((o: CommonOptions) =>
    runAction(open, o, readSwitchesAction, { input: () => ({}), human }),
  );
  common(
    switches.command('api <state>').description('on: answer; off: every endpoint answers 503 api_disabled'),
  ).action((state: string, o: CommonOptions) =>
    runAction(open, o, setApiSwitchAction, {
      input: () => ({ state: parseFlag(state) ? 'on' : 'off' }),
      human,
      target: ['api'],
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
    return runAction(open, o, setCapabilitySwitchAction, {
      input: () => ({ endpoint, state: parseFlag(state) ? 'on' : 'off' }),
      human,
      target: [endpoint],
    });
  });
}

/** Connects to the Redis the API processes share, for the lockout commands; none without REDIS_URL. */
async function sharedLockouts(
  ctx: ManageContext,
  o: { redis?: string; redisPrefix: string },
): Promise<{ ctx: ManageContext; close?: () => void }> {
  const url = readSetting('redisUrl', o.redis);
  if (!url) return { ctx };
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true });
  await redis.connect();
  const access = new StoreAccessControl({
    store: ctx.store,
    clock: ctx.clock,
    limits: ctx.limits,
    redis,
    redisPrefix: o.redisPrefix,
  });
  return { ctx: { ...ctx, lockouts: access.keyLockouts }, close: () => redis.disconnect() };
}

/** `admin lockouts list|unlock`: failed-authentication lockouts, on the Redis the API processes share. */
export function registerLockoutCommands(admin: Command, open: OpenStore): void {
  const lockouts = admin
    .command('lockouts')
    .description('failed-authentication lockouts of keys and addresses (needs the shared REDIS_URL)');
  type RedisOptions = CommonOptions & { redis?: string; redisPrefix: string };
  common(lockouts.command('list').description('failed attempts and lockouts of the keys'))
    .addOption(settingOption('redisUrl', 'Redis the API processes share'))
    .addOption(settingOption('redisPrefix'))
    .option('--integration <id>', 'only the keys of this integration')
    .action((o: RedisOptions & { integration?: string }) =>
      runAction<{ integration: string; key: string; failures: number; lockedUntil: string | null }[]>(
        open,
        o,
        listLockoutsAction,
        {
          input: () => (o.integration ? { integration: o.integration } : {}),
          human: (list) =>
            table(
              ['INTEGRATION', 'KEY', 'FAILED ATTEMPTS', 'LOCKED UNTIL'],
              list.map((l) => [l.integration, l.key, String(l.failures), l.lockedUntil ?? 'not locked']),
            ),
          extend: (ctx) => sharedLockouts(ctx, o),
        },
      ),
    );
  common(lockouts.command('addresses').description('client addresses locked out now, and until when'))
    .addOption(settingOption('redisUrl', 'Redis the API processes share'))
    .addOption(settingOption('redisPrefix'))
    .action((o: RedisOptions) =>
      runAction<{ address: string; lockedUntil: string }[]>(open, o, listAddressLockoutsAction, {
        input: () => ({}),
        human: (list) =>
          list.length === 0
            ? 'no address is locked out'
            : table(
                ['ADDRESS', 'LOCKED UNTIL'],
                list.map((l) => [l.address, l.lockedUntil]),
              ),
        extend: (ctx) => sharedLockouts(ctx, o),
      }),
    );
  common(lockouts.command('unlock').description('end the lockout of a key (lookup id) or of a client address'))
    .addOption(settingOption('redisUrl', 'Redis the API processes share'))
    .addOption(settingOption('redisPrefix'))
    .option('--key <id>', 'the key lookup id (as `integrations list` shows it)')
    .option('--address <ip>', 'the client address')
    .action((o: RedisOptions & { key?: string; address?: string }) =>
      runAction<{ key: string | null; address: string | null }>(open, o, unlockAction, {
        input: () => ({ ...(o.key ? { key: o.key } : {}), ...(o.address ? { address: o.address } : {}) }),
        human: (r) => `unlocked: ${[r.key, r.address].filter(Boolean).join(', ')}`,
        target: [o.key, o.address].filter((v): v is string => v !== undefined),
        extend: (ctx) => sharedLockouts(ctx, o),
      }),
    );
}

/** `admin integrations requests ID` and `admin failures`: what the request log recorded (docs/request-log.md). */
export function registerRequestLogCommands(admin: Command, integrations: Command, open: OpenStore): void {
  type RequestsOptions = CommonOptions & {
    limit?: string;
    after?: string;
    since?: string;
    until?: string;
    failed?: boolean;
    code?: string;
    endpoint?: string;
  };
  common(integrations.command('requests <id>').description("the integration's request log, newest first"))
    .option('--limit <n>', 'entries (default 50, at most 500)')
    .option('--after <next>', 'the next page: the `next` a page printed')
    .option('--since <time>', 'entries at or after this ISO 8601 time')
    .option('--until <time>', 'entries before this ISO 8601 time')
    .option('--failed', 'failed requests only')
    .option('--code <code>', 'this error code only')
    .option('--endpoint <template>', 'this route template only, e.g. /v1/leads')
    .action((id: string, o: RequestsOptions) =>
      runAction<{ entries: Record<string, unknown>[]; next: string | null }>(open, o, requestsAction, {
        input: () => {
          const input: Record<string, unknown> = { id };
          if (o.limit !== undefined) input.limit = Number(o.limit);
          if (o.failed) input.failed = true;
          for (const field of ['after', 'since', 'until', 'code', 'endpoint'] as const) {
            if (o[field] !== undefined) input[field] = o[field];
          }
          return input;
        },
        human: (page) =>
          [
            table(
              ['TIME', 'REQUEST', 'METHOD', 'ENDPOINT', 'STATUS', 'CODE', 'ITEMS', 'ADDRESS'],
              page.entries.map((e) =>
                ['at', 'requestId', 'method', 'endpoint', 'status', 'code', 'items', 'address'].map((k) =>
                  String(e[k] ?? '-'),
                ),
              ),
            ),
            ...(page.next ? [`more: --after ${page.next}`] : []),
          ].join('\n'),
      }),
    );
  common(admin.command('failures').description('failed requests by code and endpoint, most first'))
    .option('--integration <id>', 'only this integration')
    .option('--hours <n>', 'the last N hours (default 24)')
    .action((o: CommonOptions & { integration?: string; hours?: string }) =>
      runAction<{ code: string; endpoint: string; count: number; lastAt: string }[]>(open, o, failuresAction, {
        input: () => ({
          ...(o.integration ? { integration: o.integration } : {}),
          ...(o.hours !== undefined ? { hours: Number(o.hours) } : {}),
        }),
        human: (list) =>
          table(
            ['CODE', 'ENDPOINT', 'COUNT', 'LAST'],
            list.map((f) => [f.code, f.endpoint, String(f.count), f.lastAt]),
          ),
      }),
    );
}
