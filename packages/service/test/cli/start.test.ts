import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { startCli, tempDir } from './cli.js';

const exec = promisify(execFile);

/** Whether `port` can be listened on now. */
const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ host: '127.0.0.1', port }, () => probe.close(() => resolve(true)));
  });

/**
 * A free port whose next port is free too, below Linux's ephemeral range (32768 and up): the ports other
 * tests running alongside listen on (port 0) and connect from are drawn from that range, so neither of these
 * two is taken between the check and the start (one was, once, with `freePort`).
 */
async function freePortPair(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if ((await bindable(port)) && (await bindable(port + 1))) return port;
  }
}

describe('crm-export start (what npm start runs)', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  const db = tmp.db('start');
  let key: string;
  afterAll(() => tmp.remove());

  it('on the first start fills demo data, prints the key once and a curl command that works as printed', async () => {
    const server = await startCli(['start', '--db', db, '--port', '0', '--leads', '5'], { LOG_LEVEL: 'info' });
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
      // The start banner also as one JSON log line on standard error, without the key.
      const started = () =>
        server
          .stderr()
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .find((line) => line.msg === 'started');
      await expect.poll(started).toBeDefined();
      const banner = started();
      expect(banner).toMatchObject({ base_url: `${server.base}`, demo_key_created: true });
      expect(banner?.example_teams).toHaveLength(2);
      // Where the API reference is: the operator listener `start` opens by default, on another free port.
      const reference = /^API reference: (http:\/\/127\.0\.0\.1:\d+\/docs\/)$/m.exec(out)?.[1];
      expect(banner?.reference_url).toBe(reference);
      expect(new URL(reference as string).port).not.toBe(new URL(server.base).port);
      expect((await fetch(reference as string)).status).toBe(200);
      expect(server.stderr()).not.toContain(key);
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

  it('with a fixed --port the reference is on the API port plus one, or on any free port while that one is busy', async () => {
    const port = await freePortPair();
    const referenceOf = (out: string) => /^API reference: (\S+)$/m.exec(out)?.[1] ?? '';
    const occupant = createServer();
    // Busy either way: held here, or already in use by something else (then the fallback is tested all the same).
    await new Promise<void>((resolve) => {
      occupant.once('error', () => resolve());
      occupant.listen({ host: '127.0.0.1', port: port + 1 }, resolve);
    });
    try {
      const server = await startCli(['start', '--db', db, '--port', String(port)]);
      try {
        const reference = referenceOf(server.stdout());
        expect(reference).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/docs\/$/);
        expect(new URL(reference).port).not.toBe(String(port + 1));
        expect((await fetch(reference)).status).toBe(200);
      } finally {
        expect(await server.stop()).toBe(0);
      }
    } finally {
      if (occupant.listening) await new Promise((resolve) => occupant.close(resolve));
    }
    const server = await startCli(['start', '--db', db, '--port', String(port)]);
    try {
      expect(referenceOf(server.stdout())).toBe(`http://127.0.0.1:${port + 1}/docs/`);
      // The operator listener is internal: problem bodies name the code without its address.
      const body = (await (await fetch(`${server.base}/me`)).json()) as { doc_url: string };
      expect(body.doc_url).toBe('tag:crm-export,2026:errors#invalid_credentials');
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
