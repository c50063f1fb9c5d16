import type { Command } from 'commander';
import { createIntegration } from '../access/integrations.js';
import { iso, systemClock } from '../clock.js';
import { startOfUtcDay } from '../demo/demo-defaults.js';
import { DOCS_PATH } from '../service-names.js';
import { settingOption } from '../settings/read-setting.js';
import type { Store } from '../store/store.js';
import { runCommand } from '../write/commands/commands.js';
import { START_META_KEY } from '../write/commands/meta-state.js';
import { internalLine, openDb, opsLine, serverSettings } from './options.js';
import { printable, terminalText } from './terminal-text.js';

/** The first start's demo: fixed, so every fresh clone starts with the same example data. */
const START_DEMO = { seed: 1, teams: 2 } as const;

interface StartRecord {
  teams: string[];
  integration: string;
  last4: string;
  created_at: string;
}

interface FirstStart {
  record: StartRecord;
  key: string;
}

/** Fills the demo data (unless an interrupted first start already did) and creates the demo key. */
async function firstStart(store: Store, leads: number): Promise<FirstStart> {
  const { demoTeamIds } = await import('../demo/demo-generator.js');
  const { runDemo } = await import('../demo/run-demo.js');
  const teams = demoTeamIds(START_DEMO);
  if (!(await store.getEntity('team', teams[0]!))) {
    process.stdout.write(`First start: generating demo data for two example teams (${leads} leads each)...\n`);
    await runDemo(store, { ...START_DEMO, leads, now: startOfUtcDay(Date.now()), progress: process.stderr });
  }
  const { integration, key } = await createIntegration(store, systemClock, { teams, name: 'Demo key (npm start)' });
  // Prepare the teams now rather than in the server's background job, so the printed curl works at once.
  const { capturePending } = await import('../write/commands/capture.js');
  await capturePending(store, systemClock);
  const record: StartRecord = {
    teams,
    integration: integration.id,
    last4: key.slice(-4),
    created_at: iso(systemClock.now()),
  };
  await runCommand(store, 'start.record', { record });
  return { record, key };
}

export function registerStartCommand(program: Command): void {
  const command = program
    .command('start')
    .description('what `npm start` runs: migrate, fill demo data and create a demo key on the first start, then serve')
    .addOption(settingOption('db', 'database URL, created and migrated when missing'))
    .addOption(settingOption('host'))
    .addOption(settingOption('port'))
    .addOption(settingOption('trustProxy'))
    .addOption(settingOption('opsPort'))
    .addOption(settingOption('opsHost'))
    .addOption(settingOption('docsUrl'))
    .addOption(settingOption('internalPort'))
    .addOption(settingOption('internalHost'))
    .addOption(settingOption('startLeads'));
  command.action(
    async (opts: {
      db?: string;
      host?: string;
      port?: number;
      trustProxy?: string;
      leads: number;
      opsHost?: string;
      opsPort?: number;
      docsUrl?: string;
      internalHost?: string;
      internalPort?: number;
    }) => {
      // The operator listener serves the API reference: on by default for the local demo.
      const settings = serverSettings(opts, process.env, { opsByDefault: true });
      const store = await openDb(opts.db, { create: true });
      const stored = await store.getMeta(START_META_KEY);
      const first = stored === undefined ? await firstStart(store, opts.leads) : undefined;
      const record = first?.record ?? (JSON.parse(stored as string) as StartRecord);
      const { createLogger, startServer } = await import('../server.js');
      const logger = createLogger(settings.logLevel);
      let origin: string;
      let reference: string;
      try {
        const server = await startServer({ store, ...settings, logger });
        origin = server.origin;
        reference = `${server.opsOrigin as string}${DOCS_PATH}/`;
        process.stdout.write(opsLine(server.opsOrigin as string));
        if (server.internalOrigin) process.stdout.write(internalLine(server.internalOrigin));
      } catch (error) {
        // The key exists only in this process now: print it even though the server did not start.
        if (first) process.stdout.write(`\nDemo key (shown once): ${first.key}\n`);
        await store.close();
        throw error;
      }
      // The banner for log collectors too: where to call and which demo data, never the key itself.
      logger.info(
        {
          base_url: `${origin}/v1`,
          reference_url: reference,
          example_teams: record.teams,
          demo_integration: record.integration,
          demo_key_created: first !== undefined,
          demo_key_created_at: record.created_at,
        },
        'started',
      );
      // The record is read back from the database: each value is shown with its control characters escaped.
      const shown: StartRecord = {
        teams: record.teams.map(printable),
        integration: printable(record.integration),
        last4: printable(record.last4),
        created_at: printable(record.created_at),
      };
      const db = opts.db === undefined ? undefined : printable(opts.db);
      process.stdout.write(terminalText(startMessage(`${origin}/v1`, reference, shown, first?.key, db)));
    },
  );
}

/**
 * What `start` prints: the base URL, where the API reference is served (the operator listener), the key only
 * when just created, and a curl command that works as printed.
 */
function startMessage(
  base: string,
  reference: string,
  record: StartRecord,
  key: string | undefined,
  db: string | undefined,
): string {
  // Header values in double quotes (so `$KEY` expands), the URL in single quotes (it holds `?`).
  const curl = (secret: string) =>
    `curl -s -H "Authorization: Bearer ${secret}" -H "Service-Team: ${record.teams[0]}" '${base}/leads?limit=2'`;
  const lines = [
    '',
    `crm-export is serving ${base}`,
    `API reference: ${reference}`,
    `Example teams: ${record.teams.join(', ')}`,
    '',
  ];
  if (key) {
    lines.push(
      'Demo key (shown once, now: store it; only a digest is kept):',
      `  ${key}`,
      '',
      'Try it:',
      `  ${curl(key)}`,
    );
  } else {
    lines.push(
      `Reusing the demo data. The demo key (integration ${record.integration}, ending in ${record.last4}) was printed`,
      `by the first start on ${record.created_at} and is never shown again.`,
      'Lost it? Create another key and use it:',
      `  KEY=$(npx crm-export admin integrations create${db ? ` --db '${db}'` : ''} --teams ${record.teams.join(',')} --name "Demo" --json | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).key')`,
      `  ${curl('$KEY')}`,
    );
  }
  lines.push('', 'Stop with Ctrl+C.', '');
  return lines.join('\n');
}
