import { afterAll, describe, expect, it } from 'vitest';
import { RECORD_KINDS } from '../../src/schemas/enums.js';
import { openStore } from '../../src/store/open-store.js';
import { cliJson, runCli, tempDir } from './cli.js';

/** Every live record of the teams, `updated_at` (when the service recorded the version) left out. */
async function dump(db: string, teams: readonly string[]): Promise<string[]> {
  const store = await openStore(db);
  try {
    const out: string[] = [];
    for (const team of teams) {
      for (const kind of RECORD_KINDS) {
        let after = 0;
        for (;;) {
          const rows = await store.listRecords({ team, kind, after, limit: 500 });
          out.push(...rows.map((row) => row.json.replace(/"updated_at":"[^"]*"/g, '')));
          if (rows.length < 500) break;
          after = rows[rows.length - 1]!.seq;
        }
      }
    }
    return out;
  } finally {
    await store.close();
  }
}

describe('crm-export demo, as a user runs it', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  afterAll(() => tmp.remove());
  type DemoOutput = { seed: number; teams: string[]; leads: number; events: number };

  it('is deterministic with --seed: two runs, the same records and ids', async () => {
    const args = ['--teams', '2', '--leads', '12', '--seed', '99', '--json'];
    const first = await cliJson<DemoOutput>(['demo', '--db', tmp.db('one'), ...args]);
    const second = await cliJson<DemoOutput>(['demo', '--db', tmp.db('two'), ...args]);
    expect(first.leads).toBe(24);
    expect(second.teams).toEqual(first.teams);
    const records = await dump(tmp.db('one'), first.teams);
    expect(records.length).toBeGreaterThan(100);
    expect(await dump(tmp.db('two'), second.teams)).toEqual(records);

    const other = await cliJson<DemoOutput>([
      'demo',
      '--db',
      tmp.db('three'),
      '--leads',
      '12',
      '--seed',
      '100',
      '--json',
    ]);
    expect(other.teams).not.toEqual(first.teams);
  });

  it('refuses to add the data of a seed a second time to the same database', async () => {
    const result = await runCli(['demo', '--db', tmp.db('one'), '--leads', '1', '--seed', '99']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('seed 99 is already in this database');
  });
});
