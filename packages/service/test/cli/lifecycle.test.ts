import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, type RunningCli, runCli, startCli, tempDir } from './cli.js';
import { CONTINUE, rawConnect, searchRequest, waitFor } from './raw-client.js';

// Issue: production faults never take the service down. Time limits on slow or silent clients, and a
// shutdown that drains requests in flight for a bounded grace period (docs/deploy.md).

describe('crm-export serve: time limits and shutdown', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  const db = tmp.db('lifecycle');
  let key: string;
  let team: string;

  beforeAll(async () => {
    const demo = await cliJson<{ teams: string[] }>(['demo', '--db', db, '--teams', '1', '--leads', '4', '--json']);
    team = demo.teams[0] as string;
    const args = ['admin', 'integrations', 'create', '--db', db, '--teams', team, '--name', 'Lifecycle', '--json'];
    key = (await cliJson<{ key: string }>(args)).key;
    // Prepared now, so the search below answers 200 rather than 409 capture_not_ready.
    expect((await runCli(['admin', 'feed', 'capture', '--db', db])).code).toBe(0);
  }, 60_000);
  afterAll(() => tmp.remove());

  const serve = (limits: Record<string, number>): Promise<RunningCli> =>
    startCli(['serve', '--db', db, '--port', '0'], { CRM_EXPORT_LIMITS: JSON.stringify(limits), LOG_LEVEL: 'info' });
  const signal = (server: RunningCli, name: NodeJS.Signals = 'SIGTERM') => process.kill(server.pid, name);

  it('SIGTERM with a search body still trickling in: the request is answered with Connection: close, an idle keep-alive connection is closed at once, and serve exits 0', async () => {
    // A long grace period: exiting well before it shows nothing waited on the idle connection.
    const server = await serve({ shutdownGraceMs: 30_000 });
    const idle = rawConnect(server.base, 'GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await waitFor(idle.received, '"status"');
    const { head, body } = searchRequest(key, team, true);
    const trickled = rawConnect(server.base, head + body.slice(0, 5));
    await waitFor(trickled.received, CONTINUE);

    const signalled = Date.now();
    signal(server);
    await waitFor(server.stderr, '"msg":"shutting down"');
    expect(await idle.closed).toMatch(/^HTTP\/1\.1 200 /);
    trickled.socket.write(body.slice(5));
    const answer = (await trickled.closed).slice(CONTINUE.length);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(answer).toContain('"object":"list"');
    expect(await server.exited).toBe(0);
    // Logged after the feed jobs stopped and Redis and the database closed.
    expect(server.stderr()).toContain('"msg":"stopped"');
    expect(Date.now() - signalled).toBeLessThan(15_000);
  });

  it('stalled clients (silent, half a head, half a body) do not hold shutdown past the grace period: the stalled request is cut at the deadline and serve exits 0', async () => {
    const graceMs = 1500;
    const server = await serve({ shutdownGraceMs: graceMs });
    const { head, body } = searchRequest(key, team, true);
    const halfBody = rawConnect(server.base, head + body.slice(0, 5));
    const halfHead = rawConnect(server.base, 'GET /v1/health HTTP/1.1\r\nHo');
    const silent = rawConnect(server.base);
    await waitFor(halfBody.received, CONTINUE);

    const signalled = Date.now();
    signal(server);
    // No answer: the connection is cut.
    expect(await halfBody.closed).toBe(CONTINUE);
    const cutAfter = Date.now() - signalled;
    expect(await halfHead.closed).toBe('');
    expect(await silent.closed).toBe('');
    expect(await server.exited).toBe(0);
    expect(server.stderr()).toContain('"msg":"stopped"');
    // Given its grace period, then cut: not before it, and not long after (a fault bound, not a speed test).
    expect(cutAfter).toBeGreaterThanOrEqual(graceMs - 100);
    expect(Date.now() - signalled).toBeLessThan(graceMs + 8000);
  });

  it('SIGTERM still ends serve with exit 0 when whatever read its output has gone (logging cannot hang the exit)', async () => {
    const server = await serve({ shutdownGraceMs: 30_000 });
    server.closeOutput();
    signal(server);
    const hung = setTimeout(() => signal(server, 'SIGKILL'), 15_000);
    const code = await server.processExit;
    clearTimeout(hung);
    expect(code).toBe(0);
  });

  it('a second SIGTERM while draining exits at once with code 1', async () => {
    const server = await serve({ shutdownGraceMs: 30_000 });
    const { head, body } = searchRequest(key, team, true);
    const stalled = rawConnect(server.base, head + body.slice(0, 5));
    await waitFor(stalled.received, CONTINUE);
    const signalled = Date.now();
    signal(server);
    await waitFor(server.stderr, '"msg":"shutting down"');
    signal(server);
    expect(await server.exited).toBe(1);
    expect(server.stderr()).toContain('second signal: exiting at once');
    expect(Date.now() - signalled).toBeLessThan(10_000);
    await stalled.closed;
  });

  it('the headers timeout closes silent connections with a bare 408 (not a JSON body), the request timeout a body that does not arrive, and serve keeps answering', async () => {
    const server = await serve({ headersTimeoutMs: 1000, requestTimeoutMs: 2000 });
    const opened = Date.now();
    const silent = Array.from({ length: 20 }, () => rawConnect(server.base));
    const halfHead = rawConnect(server.base, 'GET /v1/health HTTP/1.1\r\nHo');
    const { head, body } = searchRequest(key, team);
    const halfBody = rawConnect(server.base, head + body.slice(0, 5));

    const answers = await Promise.all([...silent, halfHead, halfBody].map((connection) => connection.closed));
    // Node's plain answer, not Fastify's JSON body: a status line, Connection: close, no body.
    for (const answer of answers) {
      expect(answer).toBe('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    }
    expect(Date.now() - opened).toBeLessThan(10_000);

    // Other errors of the HTTP layer get the same bare answer: a request line whose method is not HTTP gets the
    // firewall's 404 for an unknown method, a NUL in a header a 400, a head over 16 KiB a 431 (docs/api.md).
    const garbage = rawConnect(server.base, 'HELLO THERE\r\n\r\n');
    expect(await garbage.closed).toBe('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    const nul = rawConnect(server.base, 'GET /v1/health HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n');
    expect(await nul.closed).toBe('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    const huge = rawConnect(server.base, `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`);
    expect(await huge.closed).toBe(
      'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
    );

    const health = await fetch(`${server.base}/health`);
    expect(health.status).toBe(200);
    expect(await server.stop()).toBe(0);
  });

  it('the idle timeout closes a connection on which no byte moves, whatever the head and request limits', async () => {
    const server = await serve({ idleTimeoutMs: 1000, headersTimeoutMs: 20_000, requestTimeoutMs: 30_000 });
    const opened = Date.now();
    const { head, body } = searchRequest(key, team);
    const quiet = [rawConnect(server.base), rawConnect(server.base, head + body.slice(0, 5))];
    expect(await Promise.all(quiet.map((connection) => connection.closed))).toEqual(['', '']);
    expect(Date.now() - opened).toBeLessThan(10_000);
    expect(await server.stop()).toBe(0);
  });
});
