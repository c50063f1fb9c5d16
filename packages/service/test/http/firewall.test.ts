import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_A } from './fixtures.js';
import { auth, type Harness, harness } from './harness.js';

function expectPlain(res: { statusCode: number; body: string; headers: Record<string, unknown> }, status: number) {
  expect(res.statusCode).toBe(status);
  expect(res.body).toBe('');
  expect(res.headers['content-type']).toBeUndefined();
  expect(res.headers['service-request-id']).toBeUndefined();
  expect(res.headers['retry-after']).toBeUndefined();
}

describe('firewall answers', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness();
  });
  afterAll(() => h.close());

  it('HEAD gets a plain 404 from the firewall, even on /v1/health', async () => {
    expectPlain(await h.app.inject({ method: 'HEAD', url: '/v1/health' }), 404);
    expectPlain(await h.app.inject({ method: 'HEAD', url: '/v1/leads', headers: auth(KEY_A) }), 404);
  });

  it('OPTIONS and any method other than GET and POST get a plain 404', async () => {
    for (const method of ['OPTIONS', 'PUT', 'PATCH', 'DELETE'] as const) {
      expectPlain(
        await h.app.inject({ method, url: '/v1/leads', headers: { ...auth(KEY_A), origin: 'https://x.test' } }),
        404,
      );
    }
  });

  it('a path outside /v1/ gets a plain 404', async () => {
    for (const url of ['/', '/health', '/v2/leads', '/v1', '/openapi.json', '/%zz']) {
      expectPlain(await h.app.inject({ method: 'GET', url }), 404);
    }
  });

  it('the API reference paths get a plain 404 too: the reference is served on the operator listener only', async () => {
    for (const url of ['/docs/', '/docs', '/docs/errors', '/docs/openapi.json', '/docs/errors#invalid_request']) {
      expectPlain(await h.app.inject({ method: 'GET', url }), 404);
    }
  });

  it('a request with a body other than POST /v1/leads/search gets a plain 403', async () => {
    expectPlain(await h.app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A), payload: '{"a":1}' }), 403);
    expectPlain(await h.app.inject({ method: 'POST', url: '/v1/me', headers: auth(KEY_A), payload: { a: 1 } }), 403);
    expectPlain(await h.app.inject({ method: 'POST', url: '/v1/nothing', payload: 'x' }), 403);
  });

  it('a body larger than 16 KiB gets a plain 403, even on search', async () => {
    const payload = JSON.stringify({ email: `${'a'.repeat(17 * 1024)}@x.test` });
    expectPlain(await h.app.inject({ method: 'POST', url: '/v1/leads/search', headers: auth(KEY_A), payload }), 403);
  });

  it('an address sending too many requests gets a plain 429 with no Retry-After', async () => {
    h.access.blockedIps.add('127.0.0.1');
    try {
      expectPlain(await h.app.inject({ method: 'GET', url: '/v1/me', headers: auth(KEY_A) }), 429);
      expectPlain(await h.app.inject({ method: 'GET', url: '/v1/health' }), 429);
    } finally {
      h.access.blockedIps.clear();
    }
  });

  it('tells the firewall whether the request carries a well-formed key', async () => {
    h.access.calls.length = 0;
    await h.app.inject({ method: 'GET', url: '/v1/me', headers: auth(KEY_A) });
    await h.app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: 'Bearer nonsense' } });
    expect(h.access.calls.filter((c) => c.startsWith('firewall:'))).toEqual(['firewall:true', 'firewall:false']);
  });
});

describe('firewall answers over a real connection', () => {
  let h: Harness;
  let port: number;
  beforeAll(async () => {
    h = await harness();
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    port = (h.app.server.address() as AddressInfo).port;
  });
  afterAll(() => h.close());

  function send(method: string, path: string, headers: Record<string, string>, chunks: string[]) {
    return new Promise<{ statusCode: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, body, headers: res.headers }));
      });
      req.on('error', reject);
      for (const chunk of chunks) req.write(chunk);
      req.end();
    });
  }

  it('a chunked body larger than 16 KiB gets a plain 403 on search', async () => {
    const chunk = 'a'.repeat(4096);
    const res = await send(
      'POST',
      '/v1/leads/search',
      { ...auth(KEY_A), 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      ['{"email":"', chunk, chunk, chunk, chunk, chunk, '@x.test"}'],
    );
    expectPlain(res, 403);
  });

  it('a chunked body within 16 KiB on search reaches the API', async () => {
    const res = await send(
      'POST',
      '/v1/leads/search',
      { ...auth(KEY_A), 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      ['{"email":', '"nobody@x.test"}'],
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['service-request-id']).toMatch(/^req_/);
  });

  it('a chunked body on a GET gets a plain 403', async () => {
    const res = await send('GET', '/v1/leads', { ...auth(KEY_A), 'transfer-encoding': 'chunked' }, ['x']);
    expectPlain(res, 403);
  });

  it('a repeated Service-Team header gets 400 invalid_request naming Service-Team', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/members`, {
      headers: [
        ['authorization', `Bearer ${KEY_A}`],
        ['service-team', 'team_A1'],
        ['service-team', 'team_A1'],
      ],
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'invalid_request', param: 'Service-Team' });
  });
});
