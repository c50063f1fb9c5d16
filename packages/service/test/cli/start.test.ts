import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { startCli, tempDir } from './cli.js';

const exec = promisify(execFile);

describe('crm-export start (what npm start runs)', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  const db = tmp.db('start');
  let key: string;
  afterAll(() => tmp.remove());

  it('on the first start fills demo data, prints the key once and a curl command that works as printed', async () => {
    const server = await startCli(['start', '--db', db, '--port', '0', '--leads', '5']);
    try {
      const out = server.stdout();
      key = /^ {2}(crmx_live_[0-9A-Za-z]+)$/m.exec(out)?.[1] ?? '';
      expect(key).not.toBe('');
      const curl = /^ {2}(curl .+)$/m.exec(out)?.[1];
      expect(curl).toBeDefined();
      expect(curl).toContain(`Authorization: Bearer ${key}`);
      // The two-team demo key needs Service-Team on team endpoints: the printed command carries it.
      expect(curl).toMatch(/Service-Team: team_[0-9A-Za-z]+/);
      const { stdout } = await exec('sh', ['-c', curl!]);
      const page = JSON.parse(stdout) as { object: string; data: Array<{ object: string; livemode: boolean }> };
      expect(page.object).toBe('list');
      expect(page.data.length).toBeGreaterThan(0);
      expect(page.data.every((lead) => lead.object === 'lead' && lead.livemode === false)).toBe(true);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('a later start reuses the data and says where the key was printed, never reprinting it', async () => {
    const server = await startCli(['start', '--db', db, '--port', '0', '--leads', '5']);
    try {
      const out = server.stdout();
      expect(out).not.toContain(key);
      expect(out).not.toContain('generating demo data');
      expect(out).toContain('was printed');
      expect(out).toContain(`ending in ${key.slice(-4)}`);
      // The key printed by the first start still reads the reused data.
      const teams = await fetch(`${server.base}/teams`, { headers: { authorization: `Bearer ${key}` } });
      expect(teams.status).toBe(200);
      expect(((await teams.json()) as { data: unknown[] }).data).toHaveLength(2);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
