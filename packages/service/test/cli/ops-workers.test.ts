import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opsGet, sample } from '../operator-listener/scrape.js';
import { cliJson, REPO_ROOT, runCli, startCli, tempDir } from './cli.js';

// The operator listener of a real `crm-export serve` process (docs/operations.md): with `--workers 2` the
// primary serves it and sums both workers' metrics, so one scrape counts every request whichever worker
// answered it, and serves the API reference the workers' problem bodies link to; and a single process started
// with `--ops-port` answers the probes and serves the reference.

const REDIS_URL = process.env.REDIS_URL;

/** A GET on a connection of its own, so the kernel may hand it to either worker. */
function fresh(url: string, headers: Record<string, string>): Promise<number> {
  return freshBody(url, headers).then(({ status }) => status);
}

/** `fresh`, with the body. */
function freshBody(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const OPENAPI_TEXT = readFileSync(join(REPO_ROOT, 'openapi.json'), 'utf8');

const opsOrigin = (stdout: string) => /operator listener: (http:\/\/\S+) /.exec(stdout)?.[1] as string;

describe('the operator listener of crm-export serve', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  const db = tmp.db('ops');
  let team: string;
  let key: string;

  beforeAll(async () => {
    const demo = await cliJson<{ teams: string[] }>(['demo', '--db', db, '--teams', '1', '--leads', '5', '--json']);
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
      'Ops',
      '--json',
    ]);
    key = created.key;
  }, 120_000);
  afterAll(() => tmp.remove());

  it('answers /livez, /readyz, /metrics and /docs/ on the port --ops-port names, and refuses --ops-host without a port or a busy operator port', async () => {
    const server = await startCli(['serve', '--db', db, '--port', '0', '--ops-port', '0']);
    try {
      const ops = opsOrigin(server.stdout());
      expect(ops).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await opsGet(ops, '/livez')).status).toBe(200);
      expect(await opsGet(ops, '/readyz')).toEqual({
        status: 200,
        body: '{"status":"ready","database":"ok","redis":"off"}',
      });
      expect(await fresh(`${server.base}/me`, { authorization: `Bearer ${key}` })).toBe(200);
      expect(await opsGet(ops, '/docs/openapi.json')).toEqual({ status: 200, body: OPENAPI_TEXT });
      const metrics = await opsGet(ops, '/metrics');
      expect(sample(metrics.body, 'crm_export_http_requests_total', { route: '/v1/me', status: '200' })).toBe(1);
    } finally {
      await server.stop();
    }
    const refused = await runCli(['serve', '--db', db, '--port', '0', '--ops-host', '0.0.0.0']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('--ops-host needs --ops-port');
    // An operator port in use stops the start, naming the port.
    const busy = await startCli(['serve', '--db', db, '--port', '0', '--ops-port', '0']);
    try {
      const port = new URL(opsOrigin(busy.stdout())).port;
      const second = await runCli(['serve', '--db', db, '--port', '0', '--ops-port', port]);
      expect(second.code).not.toBe(0);
      expect(second.stderr).toContain(
        `operator listener: cannot listen on 127.0.0.1:${port}: port ${port} is already in use`,
      );
    } finally {
      await busy.stop();
    }
  });

  it.skipIf(!REDIS_URL)(
    `with --workers 2, one scrape of the primary sums both workers' counters${REDIS_URL ? '' : ' (skipped: set REDIS_URL)'}`,
    async () => {
      const server = await startCli(['serve', '--db', db, '--port', '0', '--workers', '2', '--ops-port', '0'], {
        REDIS_URL: REDIS_URL as string,
      });
      try {
        const ops = opsOrigin(server.stdout());
        const requests = 30;
        for (let i = 0; i < requests; i++) {
          expect(await fresh(`${server.base}/me`, { authorization: `Bearer ${key}` })).toBe(200);
        }
        for (let i = 0; i < 3; i++) {
          expect(
            await fresh(`${server.base}/leads?limit=2`, { authorization: `Bearer ${key}`, 'service-team': team }),
          ).toBe(200);
        }
        const { status, body } = await opsGet(ops, '/metrics');
        expect(status).toBe(200);
        expect(sample(body, 'crm_export_http_requests_total', { route: '/v1/me', status: '200', code: '' })).toBe(
          requests,
        );
        expect(sample(body, 'crm_export_items_served_total', { route: '/v1/leads' })).toBe(6);
        expect(sample(body, 'crm_export_limiter_decisions_total', { limiter: 'rate_read', decision: 'allowed' })).toBe(
          requests,
        );
        // Both workers count on the shared Redis.
        expect(sample(body, 'crm_export_redis_up')).toBe(1);
        expect(await opsGet(ops, '/readyz')).toEqual({
          status: 200,
          body: '{"status":"ready","database":"ok","redis":"up","workers":{"listening":2,"configured":2}}',
        });
        // The workers do not open the operator port themselves: the API port does not serve it either.
        expect(await fresh(`${server.base.replace(/\/v1$/, '')}/metrics`, {})).toBe(404);
        expect(await freshBody(`${server.base.replace(/\/v1$/, '')}/docs/`, {})).toEqual({ status: 404, body: '' });
        // The primary renders the reference itself; no worker's problem body carries its internal address.
        expect(await opsGet(ops, '/docs/openapi.json')).toEqual({ status: 200, body: OPENAPI_TEXT });
        const reference = await opsGet(ops, '/docs/');
        expect(reference.status).toBe(200);
        // Redoc draws the page from the document it holds, whose codes link to the error page beside it.
        expect(reference.body).toContain('](errors#rate_limited)');
        expect((await opsGet(ops, '/docs/errors')).body).toContain('<section id="invalid_credentials">');
        for (let i = 0; i < 6; i++) {
          const { status, body } = await freshBody(`${server.base}/me`, {});
          expect(status).toBe(401);
          expect(JSON.parse(body)).toMatchObject({ doc_url: 'tag:crm-export,2026:errors#invalid_credentials' });
          expect(body).not.toContain(new URL(ops).host);
        }
      } finally {
        expect(await server.stop()).toBe(0);
      }
    },
  );
});
