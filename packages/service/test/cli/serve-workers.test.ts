import { execFileSync } from 'node:child_process';
import { get } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, startCli, tempDir } from './cli.js';

// `serve --workers N`: N processes on one port sharing the database and Redis (issue: several API
// processes behave as if one answered). Every request below opens its own connection, which either
// worker may accept (the kernel picks; docs/deploy.md), so the assertions hold whichever answers.

const REDIS_URL = process.env.REDIS_URL;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function fresh(url: string, key: string, team: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = get(
      url,
      { agent: false, headers: { authorization: `Bearer ${key}`, 'service-team': team } },
      (response) => {
        let body = '';
        response.on('data', (chunk) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
      },
    );
    request.on('error', reject);
  });
}

describe.skipIf(!REDIS_URL)(
  `crm-export serve --workers${REDIS_URL ? '' : ' (skipped: set REDIS_URL)'}`,
  { timeout: 120_000 },
  () => {
    const tmp = tempDir();
    const db = tmp.db('workers');
    let team: string;
    let key: string;

    beforeAll(async () => {
      const demo = await cliJson<{ teams: string[] }>([
        'demo',
        '--db',
        db,
        '--teams',
        '1',
        '--leads',
        '6',
        '--seed',
        '9',
        '--json',
      ]);
      team = demo.teams[0] as string;
      const created = await cliJson<{ key: string }>([
        'admin',
        'integrations',
        'create',
        '--db',
        db,
        '--teams',
        team,
        '--name',
        'Workers',
        '--json',
      ]);
      key = created.key;
    }, 120_000);
    afterAll(() => tmp.remove());

    it('--workers without REDIS_URL is refused: each process would keep its own limits', async () => {
      const result = await runCli(['serve', '--db', db, '--port', '0', '--workers', '2']);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('REDIS_URL');
    });

    it('two workers share one port, and a cursor and a lockout hold whichever worker answers', async () => {
      const server = await startCli(['serve', '--db', db, '--port', '0', '--workers', '2'], {
        REDIS_URL: REDIS_URL as string,
      });
      try {
        const path = db.slice('sqlite:'.length);
        const processes = execFileSync('pgrep', ['-f', `serve --db sqlite:${path}`])
          .toString()
          .trim()
          .split('\n');
        expect(processes).toHaveLength(3); // the primary and two workers

        // Walk the whole lead list one item a page: every page after the first uses a cursor another
        // connection (and so, in turn, another worker) issued.
        const seen: string[] = [];
        let url = `${server.base}/leads?limit=1`;
        for (let page = 0; page < 50; page++) {
          const answer = await fresh(url, key, team);
          expect(answer.status).toBe(200);
          const list = JSON.parse(answer.body) as { data: { id: string }[]; has_more: boolean; next_cursor: string };
          seen.push(...list.data.map((lead) => lead.id));
          if (!list.has_more) break;
          url = `${server.base}/leads?limit=1&cursor=${list.next_cursor}`;
        }
        expect(seen.length).toBeGreaterThanOrEqual(6);
        expect(new Set(seen).size).toBe(seen.length);

        // 20 wrong secrets spread over the workers lock the key everywhere (Retry-After: 600).
        const wrong = `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
        for (let i = 0; i < 20; i++) expect((await fresh(`${server.base}/me`, wrong, team)).status).toBe(401);
        for (let i = 0; i < 4; i++) {
          const locked = await fresh(`${server.base}/me`, wrong, team);
          expect(locked.status).toBe(429);
          expect(locked.headers['retry-after']).toBe('600');
        }
      } finally {
        expect(await server.stop()).toBe(0);
      }
    });
  },
);
