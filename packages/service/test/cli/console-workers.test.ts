import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, startCli, tempDir } from './cli.js';

// The console under a real `crm-export serve --workers 2`: a session opened through one worker is accepted
// by the other, since sessions are rows of the database. Each request goes on a connection of its own, so
// the cluster may hand it to either worker: a session kept in one worker's memory would fail some of them.

const REDIS_URL = process.env.REDIS_URL;

/** A request on a connection of its own: its status, headers and body. */
function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, method: options.method ?? 'GET', headers: options.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

describe.skipIf(!REDIS_URL)(
  `the console under serve --workers 2${REDIS_URL ? '' : ' (skipped: set REDIS_URL, which --workers needs)'}`,
  { timeout: 120_000 },
  () => {
    const tmp = tempDir();
    const db = tmp.db('console-workers');
    let token: string;

    beforeAll(async () => {
      await cliJson(['demo', '--db', db, '--teams', '1', '--leads', '1', '--json']);
      ({ token } = await cliJson<{ token: string }>([
        'admin',
        'tokens',
        'create',
        '--db',
        db,
        '--name',
        'me',
        '--scope',
        'read',
        '--json',
      ]));
    }, 120_000);
    afterAll(() => tmp.remove());

    it('a session opened through one worker is accepted by every worker, and sign-out ends it for all', async () => {
      const server = await startCli(['serve', '--db', db, '--port', '0', '--workers', '2', '--internal-port', '0'], {
        REDIS_URL: REDIS_URL as string,
      });
      try {
        const internal = /internal listener: (http:\/\/\S+) /.exec(server.stdout())?.[1] as string;
        expect(internal).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        const signedIn = await send(`${internal}/console/sign-in`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
          body: new URLSearchParams({ token }).toString(),
        });
        expect(signedIn.status).toBe(303);
        const cookie = String(signedIn.headers['set-cookie']).split(';')[0] as string;
        const pages = [];
        for (let i = 0; i < 12; i++)
          pages.push(await send(`${internal}/console/integrations`, { headers: { cookie } }));
        expect(pages.map((p) => p.status)).toEqual(Array(12).fill(200));
        const csrf = /name="_csrf" value="([^"]+)"/.exec(pages[0]?.body ?? '')?.[1] as string;
        const out = await send(`${internal}/console/sign-out`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
          body: new URLSearchParams({ _csrf: csrf }).toString(),
        });
        expect(out.status).toBe(303);
        const after = [];
        for (let i = 0; i < 6; i++)
          after.push((await send(`${internal}/console/integrations`, { headers: { cookie } })).status);
        expect(after).toEqual(Array(6).fill(303));
      } finally {
        expect(await server.stop()).toBe(0);
      }
    });
  },
);
