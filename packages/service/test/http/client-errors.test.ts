import { type AddressInfo, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientErrorStatus } from '../../src/http/client-errors.js';
import { KEY_A } from './fixtures.js';
import { type Harness, harness } from './harness.js';

// Requests Node's HTTP parser refuses got Fastify's `{"error":"Bad Request",...}` JSON. They now get
// the firewall's kind of answer (bare status, no body, no request id) and the connection is closed. Raw
// sockets against a real listening server: these bytes cannot be sent through fetch or inject.

interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: string;
  closed: boolean;
  /** Everything the server sent on the connection. */
  all: string;
}

/** Writes `bytes` on a new connection and reads until the server closes it (or 3 s pass). */
function raw(port: number, bytes: Buffer | string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    const chunks: Buffer[] = [];
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(parse(Buffer.concat(chunks).toString('latin1'), closed));
    };
    const timer = setTimeout(() => finish(false), 3000);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('close', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ECONNRESET') reject(error);
    });
  });
}

/** The last response on the connection (earlier ones, on keep-alive, are skipped). */
function parse(text: string, closed: boolean): RawAnswer {
  const start = text.lastIndexOf('HTTP/1.1 ');
  const response = text.slice(start);
  const end = response.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = response.slice(0, end).split('\r\n');
  const headers = new Map(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: response.slice(end + 4), closed, all: text };
}

function expectBare(answer: RawAnswer, status: number): void {
  expect(answer.status).toBe(status);
  // No body (Node's own missing-Host answer sends it as an empty chunked body).
  expect(answer.body === '' || answer.body === '0\r\n\r\n').toBe(true);
  expect(answer.headers.has('content-type')).toBe(false);
  expect(answer.headers.has('service-request-id')).toBe(false);
  expect(answer.headers.has('retry-after')).toBe(false);
  expect(answer.headers.get('connection')).toBe('close');
  expect(answer.closed).toBe(true);
}

const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
const E_ACUTE = [0xc3, 0xa9];

describe('requests the HTTP parser refuses', () => {
  let h: Harness;
  let port: number;
  beforeAll(async () => {
    h = await harness();
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    port = (h.app.server.address() as AddressInfo).port;
  });
  afterAll(() => h.close());

  const bare400: [string, Buffer][] = [
    ['a raw non-ASCII byte in the request target', bytes('GET /v1/h', E_ACUTE, 'alth HTTP/1.1\r\nHost: x\r\n\r\n')],
    [
      'a raw non-ASCII byte in a header name',
      bytes('GET /v1/health HTTP/1.1\r\nHost: x\r\nX-', E_ACUTE, ': a\r\n\r\n'),
    ],
    ['a NUL byte in a header value', bytes('GET /v1/health HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n')],
    ['a NUL byte in the request target', bytes('GET /v1/hea\0lth HTTP/1.1\r\nHost: x\r\n\r\n')],
    [
      'Content-Length together with Transfer-Encoding',
      bytes(
        'POST /v1/leads/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n',
        'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      ),
    ],
    ['a space in the request target', bytes('GET /v1/lea ds HTTP/1.1\r\nHost: x\r\n\r\n')],
    ['an HTTP version the parser does not know', bytes('GET /v1/health HTTP/7.1\r\nHost: x\r\n\r\n')],
    ['an HTTP/1.1 request without Host (answered by Node itself)', bytes('GET /v1/health HTTP/1.1\r\n\r\n')],
  ];
  for (const [what, request] of bare400) {
    it(`${what} gets a bare 400 with no body and the connection is closed`, async () => {
      expectBare(await raw(port, request), 400);
    });
  }

  it("a lowercase method gets the firewall's plain 404, like any method other than GET and POST", async () => {
    expectBare(await raw(port, 'get /v1/health HTTP/1.1\r\nHost: x\r\n\r\n'), 404);
    expectBare(await raw(port, 'post /v1/leads/search HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n'), 404);
  });

  it("a method the parser does not know gets the firewall's plain 404", async () => {
    expectBare(await raw(port, 'FOO /v1/health HTTP/1.1\r\nHost: x\r\n\r\n'), 404);
  });

  it('a URL too long for the parser (request head over 16 KiB) gets a bare 431', async () => {
    const url = `/v1/leads/lead_${'a'.repeat(17 * 1024)}`;
    expectBare(await raw(port, `GET ${url} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY_A}\r\n\r\n`), 431);
  });

  it('an unknown well-formed id of 10,000 characters over a real connection is 404 resource_missing', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/leads/lead_${'a'.repeat(10_000)}`, {
      headers: { authorization: `Bearer ${KEY_A}` },
    });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await res.json()) as { code: string }).code).toBe('resource_missing');
  });

  it('a malformed request pipelined after a good one gets the good answer first, then the bare 400', async () => {
    const good = 'GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n';
    const answer = await raw(port, bytes(good, 'GET /v1/he alth HTTP/1.1\r\nHost: x\r\n\r\n'));
    expect(answer.all.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
    expectBare(answer, 400);
    const res = await fetch(`http://127.0.0.1:${port}/v1/health`);
    expect(res.status).toBe(200);
  });

  it('the parser error codes map to the firewall statuses, anything unknown to 400', () => {
    expect(clientErrorStatus('HPE_INVALID_METHOD')).toBe(404);
    expect(clientErrorStatus('HPE_HEADER_OVERFLOW')).toBe(431);
    expect(clientErrorStatus('ERR_HTTP_REQUEST_TIMEOUT')).toBe(408);
    expect(clientErrorStatus('HPE_SOMETHING_NEW')).toBe(400);
    expect(clientErrorStatus(undefined)).toBe(400);
  });
});
