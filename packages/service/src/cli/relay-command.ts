import type { Command } from 'commander';
import { ConfigError } from '../settings/config-error.js';
import { readSetting, settingOption } from '../settings/read-setting.js';
import { SETTINGS } from '../settings/settings.js';

interface RelayFlags {
  outboxUrl?: string;
  outboxTable: string;
  intakeUrl?: string;
  token?: string;
  source?: string;
  batch: number;
  pollInterval: number;
  maxBackoff: number;
  metricsPort?: number;
  metricsHost: string;
  once?: boolean;
}

/** A setting that must be given, by its flag or its variable. */
function required<T>(value: T | undefined, name: 'relayOutboxUrl' | 'relayIntakeUrl' | 'relayToken'): T {
  if (value !== undefined) return value;
  const setting = SETTINGS[name];
  throw new ConfigError(`${setting.flag.split(' ')[0]} (or ${setting.env}) is required`);
}

export function registerRelayCommand(program: Command): void {
  program
    .command('relay')
    .description("post the CRM's outbox table to the intake endpoint, in order, resuming where the service is")
    .addOption(settingOption('relayOutboxUrl'))
    .addOption(settingOption('relayOutboxTable'))
    .addOption(settingOption('relayIntakeUrl'))
    .addOption(settingOption('relayToken'))
    .addOption(settingOption('relaySource'))
    .addOption(settingOption('relayBatch'))
    .addOption(settingOption('relayPollInterval'))
    .addOption(settingOption('relayMaxBackoff'))
    .addOption(settingOption('relayMetricsPort'))
    .addOption(settingOption('relayMetricsHost'))
    .option('--once', 'relay the rows committed now, then exit (0 when all were answered)')
    .action(async (opts: RelayFlags) => {
      const outboxUrl = required(readSetting('relayOutboxUrl', opts.outboxUrl), 'relayOutboxUrl');
      const intakeUrl = required(readSetting('relayIntakeUrl', opts.intakeUrl), 'relayIntakeUrl');
      const token = required(readSetting('relayToken', opts.token), 'relayToken');
      const source = readSetting('relaySource', opts.source) as string;
      const metricsPort = readSetting('relayMetricsPort', opts.metricsPort);
      const { createLogger } = await import('../server.js');
      const { IntakeClient } = await import('../relay/intake-client.js');
      const { Outbox } = await import('../relay/outbox.js');
      const { RelayMetrics, listenMetrics } = await import('../relay/relay-metrics.js');
      const { runRelay } = await import('../relay/relay.js');
      const logger = createLogger();
      const metrics = new RelayMetrics();
      const listener =
        metricsPort === undefined ? undefined : await listenMetrics(metrics, opts.metricsHost, metricsPort);
      if (listener) process.stdout.write(`relay metrics: ${listener.origin}/metrics\n`);
      const outbox = new Outbox(outboxUrl, opts.outboxTable);
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
      try {
        process.exitCode = await runRelay({
          outbox,
          intake: new IntakeClient({ url: intakeUrl, token }),
          source,
          batch: opts.batch,
          pollIntervalMs: opts.pollInterval,
          maxBackoffMs: opts.maxBackoff,
          once: opts.once === true,
          logger,
          metrics,
          signal: stop.signal,
        });
      } finally {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
        await outbox.close();
        await listener?.close();
      }
    });
}
