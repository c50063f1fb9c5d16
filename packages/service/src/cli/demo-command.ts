import { randomInt } from 'node:crypto';
import { type Command, InvalidArgumentError } from 'commander';
import { DEFAULT_DEMO_LEADS, DEFAULT_DEMO_TEAMS, DEMO_BATCH, startOfUtcDay } from '../demo/demo-defaults.js';
import { intOption, openDb } from './options.js';

// Heavy modules (faker, the write side) load when the command runs, so other commands start fast.
const loadDemo = async () => ({
  ...(await import('../demo/demo-generator.js')),
  ...(await import('../demo/run-demo.js')),
});

function isoOption(value: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new InvalidArgumentError('Not an ISO 8601 date-time.');
  return ms;
}

interface DemoCommandOptions {
  db?: string;
  teams: number;
  leads: number;
  seed?: number;
  now?: number;
  batchSize: number;
  json?: boolean;
  progress: boolean;
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('generate example data (one organization, example teams) through the write side')
    .option('--db <url>', 'database URL (default: DATABASE_URL, else sqlite:./data/crm-export.db)')
    .option('--teams <n>', 'example teams', intOption(1, 100), DEFAULT_DEMO_TEAMS)
    .option('--leads <n>', 'leads per team', intOption(0, 1_000_000), DEFAULT_DEMO_LEADS)
    .option(
      '--seed <s>',
      'seed: the same seed gives the same records and ids (default: random, printed)',
      intOption(0, 2 ** 31 - 1),
    )
    .option('--now <iso>', 'business times end at this instant (default: today 00:00 UTC)', isoOption)
    .option('--batch-size <n>', 'events per transaction', intOption(1, 100_000), DEMO_BATCH)
    .option('--no-progress', 'no progress bar')
    .option('--json', 'print the result as JSON')
    .action(async (opts: DemoCommandOptions) => {
      const seed = opts.seed ?? randomInt(2 ** 31 - 1);
      const { demoTeamIds, runDemo } = await loadDemo();
      const store = await openDb(opts.db);
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
          now: opts.now ?? startOfUtcDay(Date.now()),
          batchSize: opts.batchSize,
          ...(opts.progress && !opts.json ? { progress: process.stderr } : {}),
        });
        const rate = Math.round(result.leadsPerSecond);
        if (opts.json) {
          const { teams, leads, events, seconds } = result;
          process.stdout.write(`${JSON.stringify({ seed, teams, leads, events, seconds, leads_per_second: rate })}\n`);
          return;
        }
        process.stdout.write(
          [
            `Generated ${result.leads} leads (${result.events} events) for ${result.teams.length} example teams in ${result.seconds.toFixed(1)} s (${rate} leads/s), seed ${seed}.`,
            `Teams: ${result.teams.join(', ')}`,
            `Create a key for them: npx crm-export admin integrations create --teams ${result.teams.join(',')} --name "Demo" --json`,
            '',
          ].join('\n'),
        );
      } finally {
        await store.close();
      }
    });
}
