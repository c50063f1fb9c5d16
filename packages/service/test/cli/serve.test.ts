import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, startCli, tempDir } from './cli.js';

/**
 * A team endpoint of a team just added to a key answers 409 capture_not_ready until the server's
 * capture job has prepared it; as the spec tells consumers, retry later.
 */
async function fetchCaptured(url: string, headers: Record<string, string>): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(url, { headers });
    if (response.status !== 409 || attempt >= 60) return response;
    expect(((await response.json()) as { code: string }).code).toBe('capture_not_ready');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('crm-export admin and serve, as a user runs them', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  const db = tmp.db('serve');
  let teams: string[];

  beforeAll(async () => {
    const demo = await cliJson<{ teams: string[] }>(['demo', '--db', db, '--leads', '4', '--seed', '5', '--json']);
    teams = demo.teams;
  }, 120_000);
  afterAll(() => tmp.remove());

  it('admin teams list --json lists the example teams the demo created', async () => {
    const listed = await cliJson<Array<{ id: string; livemode: boolean; organization: string | null }>>([
      'admin',
      'teams',
      'list',
      '--db',
      db,
      '--json',
    ]);
    expect(listed.map((t) => t.id).sort()).toEqual([...teams].sort());
    expect(listed.every((t) => t.livemode === false)).toBe(true);
    expect(new Set(listed.map((t) => t.organization)).size).toBe(1);
  });

  it('admin integrations create --json prints the key once in a key field, and the key works against serve', async () => {
    const created = await cliJson<{ key: string }>([
      'admin',
      'integrations',
      'create',
      '--db',
      db,
      '--teams',
      teams.join(','),
      '--name',
      'CLI test',
      '--json',
    ]);
    expect(created.key).toMatch(/^crmx_live_[0-9A-Za-z]+$/);

    const server = await startCli(['serve', '--db', db, '--port', '0']);
    try {
      const auth = { authorization: `Bearer ${created.key}` };
      const me = await fetch(`${server.base}/me`, { headers: auth });
      expect(me.status).toBe(200);
      expect(await me.json()).toMatchObject({ object: 'integration', teams: expect.arrayContaining(teams) });

      const leads = await fetchCaptured(`${server.base}/leads?limit=3`, { ...auth, 'service-team': teams[0]! });
      expect(leads.status).toBe(200);
      const page = (await leads.json()) as { object: string; data: Array<{ team: string; livemode: boolean }> };
      expect(page.object).toBe('list');
      expect(page.data.length).toBeGreaterThan(0);
      expect(page.data.every((lead) => lead.team === teams[0] && lead.livemode === false)).toBe(true);

      const health = await fetch(`${server.base}/health`);
      expect(health.status).toBe(200);
      expect(health.headers.get('service-release')).toMatch(/^crm-export@/);
    } finally {
      // SIGTERM closes the server, then the store, and exits cleanly.
      expect(await server.stop()).toBe(0);
    }
  });

  it.skipIf(!process.env.REDIS_URL)(
    `with REDIS_URL, serve keeps its limiter counters in Redis${process.env.REDIS_URL ? '' : ' (skipped: set REDIS_URL)'}`,
    async () => {
      const { Redis } = await import('ioredis');
      const redis = new Redis(process.env.REDIS_URL as string);
      const created = await cliJson<{ key: string; integration: { id: string } }>([
        'admin',
        'integrations',
        'create',
        '--db',
        db,
        '--teams',
        teams[0]!,
        '--name',
        'Redis test',
        '--json',
      ]);
      const server = await startCli(['serve', '--db', db, '--port', '0'], {
        REDIS_URL: process.env.REDIS_URL as string,
      });
      try {
        const leads = await fetchCaptured(`${server.base}/leads?limit=2`, { authorization: `Bearer ${created.key}` });
        expect(leads.status).toBe(200);
        // The first request of a fresh process already counts in Redis, where every process sees it.
        expect(await redis.exists(`crmx:items:${created.integration.id}`)).toBe(1);
      } finally {
        expect(await server.stop()).toBe(0);
        redis.disconnect();
      }
    },
  );

  it('serve refuses a port that is not a number', async () => {
    const result = await runCli(['serve', '--db', db, '--port', 'eighty']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('--port');
  });
});
