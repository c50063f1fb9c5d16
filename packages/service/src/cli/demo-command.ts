import { randomInt } from 'node:crypto';
import type { Command } from 'commander';
import { startOfUtcDay } from '../demo/demo-defaults.js';
import { settingOption } from '../settings/read-setting.js';
import { openDb } from './options.js';
import { jsonText, terminalText } from './terminal-text.js';

// Heavy modules (faker, the write side) load when the command runs, so other commands start fast.
const loadDemo = async () => ({
  ...(await import('../demo/demo-generator.js')),
  ...(await import('../demo/run-demo.js')),
});

interface DemoCommandOptions {
  db?: string;
  teams: number;
  leads: number;
  seed?: number;
  now?: string;
  batchSize: number;
  json?: boolean;
  progress: boolean;
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('generate example data (one organization, example teams) through the write side')
    .addOption(settingOption('db', 'database URL, created and migrated when missing'))
    .addOption(settingOption('demoTeams'))
    .addOption(settingOption('demoLeads'))
    .addOption(settingOption('demoSeed'))
    .addOption(settingOption('demoNow'))
    .addOption(settingOption('demoBatchSize'))
    .option('--no-progress', 'no progress bar')
    .option('--json', 'print the result as JSON')
    .action(async (opts: DemoCommandOptions) => {
      const seed = opts.seed ?? randomInt(2 ** 31 - 1);
      const { demoTeamIds, runDemo } = await loadDemo();
      const store = await openDb(opts.db, { create: true });
      try {
        const [firstTeam] = demoTeamIds({ seed, teams: opts.teams });
        if (firstTeam && (await store.getEntity('team', firstTeam))) {
          process.stderr.write(
            `crm-export demo: the data of seed ${seed} is already in this database (team ${firstTeam}); pass another --seed\n`,
          );
          process.exitCode = 1;
          return;
        }
        const result = await runDemo(store, {
          seed,
          teams: opts.teams,
          leads: opts.leads,
          now: opts.now === undefined ? startOfUtcDay(Date.now()) : Date.parse(opts.now),
          batchSize: opts.batchSize,
          ...(opts.progress && !opts.json ? { progress: process.stderr } : {}),
        });
        const rate = Math.round(result.leadsPerSecond);
        if (opts.json) {
          const { teams, leads, events, seconds } = result;
          process.stdout.write(`${jsonText({ seed, teams, leads, events, seconds, leads_per_second: rate })}\n`);
          return;
        }
        process.stdout.write(
          terminalText(
            [
              `Generated ${result.leads} leads (${result.events} events) for ${result.teams.length} example team${result.teams.length === 1 ? '' : 's'} in ${result.seconds.toFixed(1)} s (${rate} leads/s), seed ${seed}.`,
              `Teams: ${result.teams.join(', ')}`,
              `Create a key for them: npx crm-export admin integrations create --teams ${result.teams.join(',')} --name "Demo" --json`,
              '',
            ].join('\n'),
          ),
        );
      } finally {
        await store.close();
      }
    });
}
