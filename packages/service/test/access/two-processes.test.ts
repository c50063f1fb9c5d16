import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIntegration, revokeIntegration } from '../../src/access/integrations.js';
import { systemClock } from '../../src/clock.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { seedTeam } from './fixtures.js';
import { putTeamRecord } from './http-harness.js';

// Two real API processes sharing one database and one Redis: one rate limit, one lockout, and a revoke
// refused by the other process within 5 seconds; under load, the leases of both keep a key within its limit.
// Needs REDIS_URL.

const REDIS_URL = process.env.REDIS_URL;
const here = fileURLToPath(new URL('.', import.meta.url));

function startApi(
  dbPath: string,
  prefix: string,
  over: Record<string, number> = { itemsPerMinute: 100 },
): Promise<{ child: ChildProcess; base: string }> {
  const limits = JSON.stringify(over);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(here, 'api-process.ts'), dbPath, REDIS_URL as string, prefix, limits],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const port = /port=(\d+)/.exec(out)?.[1];
      if (port) resolve({ child, base: `http://127.0.0.1:${port}/v1` });
    });
    child.once('exit', (code) => reject(new Error(`API process exited with ${code}`)));
  });
}

describe.skipIf(!REDIS_URL)(`two API processes sharing Redis${REDIS_URL ? '' : ' (skipped: set REDIS_URL)'}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'crmx-two-'));
  const dbPath = join(dir, 'db.sqlite');
  const prefix = `crmx-test-two-${process.pid}-${Date.now()}`;
  let a: { child: ChildProcess; base: string };
  let b: { child: ChildProcess; base: string };
  let key: string;
  let integrationId: string;
  let store: SqliteStore;

  beforeAll(async () => {
    store = new SqliteStore({ path: dbPath });
    await store.migrate();
    await seedTeam(store, 'team_solo');
    await putTeamRecord(store, 'team_solo');
    const created = await createIntegration(store, systemClock, { teams: ['team_solo'], name: 'Two' });
    key = created.key;
    integrationId = created.integration.id;
    await store.write(async (tx) => {
      for (const id of ['lead_one', 'lead_two', 'lead_three']) {
        await tx.putRecord({
          kind: 'lead',
          id,
          team: 'team_solo',
          lead: null,
          board: null,
          stage: null,
          status: 'new',
          email: null,
          phone: null,
          version: 1,
          updatedAt: '2026-01-01T00:00:00.000Z',
          json: JSON.stringify({ id }),
        });
      }
    });
    [a, b] = await Promise.all([startApi(dbPath, prefix), startApi(dbPath, prefix)]);
  }, 60_000);

  afterAll(async () => {
    for (const p of [a, b]) p?.child.kill('SIGTERM');
    await store?.close();
    const redis = new Redis(REDIS_URL as string);
    const leftovers = await redis.keys(`${prefix}*`);
    if (leftovers.length) await redis.del(...leftovers);
    redis.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

  const get = (base: string, path: string, k = key) =>
    fetch(`${base}${path}`, { headers: { authorization: `Bearer ${k}` } });

  it('one rate limit: a list on one process leaves the other without room for a full reservation', async () => {
    const listed = await get(a.base, '/teams');
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { data: unknown[] }).data).toHaveLength(1);
    const refused = await get(b.base, '/teams');
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { code: string }).code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('a cursor issued by one process is accepted by the other', async () => {
    const first = await get(a.base, '/leads?limit=1');
    expect(first.status).toBe(200);
    const page1 = (await first.json()) as { data: { id: string }[]; next_cursor: string };
    const second = await get(b.base, `/leads?limit=2&cursor=${page1.next_cursor}`);
    expect(second.status).toBe(200);
    const page2 = (await second.json()) as { data: { id: string }[]; has_more: boolean };
    expect([...page1.data, ...page2.data].map((l) => l.id)).toEqual(['lead_one', 'lead_two', 'lead_three']);
    expect(page2.has_more).toBe(false);
  });

  it('one lockout: 20 wrong secrets split between the processes lock the key in both', async () => {
    const wrong = `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    for (let i = 1; i <= 20; i++) expect((await get(i % 2 ? a.base : b.base, '/me', wrong)).status).toBe(401);
    for (const p of [a, b]) {
      const locked = await get(p.base, '/me', wrong);
      expect(locked.status).toBe(429);
      expect(locked.headers.get('retry-after')).toBe('600');
    }
    expect((await get(b.base, '/me')).status).toBe(200);
  });

  it('a revoke made elsewhere is refused by both processes within 5 seconds', async () => {
    expect((await get(a.base, '/me')).status).toBe(200);
    expect((await get(b.base, '/me')).status).toBe(200);
    await revokeIntegration(store, systemClock, integrationId);
    const start = Date.now();
    const stopped = { a: 0, b: 0 };
    while ((!stopped.a || !stopped.b) && Date.now() - start < 8000) {
      if (!stopped.a && (await get(a.base, '/me')).status === 401) stopped.a = Date.now() - start;
      if (!stopped.b && (await get(b.base, '/me')).status === 401) stopped.b = Date.now() - start;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(stopped.a).toBeGreaterThan(0);
    expect(stopped.b).toBeGreaterThan(0);
    expect(Math.max(stopped.a, stopped.b)).toBeLessThanOrEqual(5000);
  }, 15_000);
});

describe.skipIf(!REDIS_URL)(
  `two API processes under load, each spending leases of one key's window${REDIS_URL ? '' : ' (skipped: set REDIS_URL)'}`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'crmx-lease-'));
    const dbPath = join(dir, 'db.sqlite');
    const prefix = `crmx-test-lease-${process.pid}-${Date.now()}`;
    const limit = 3000;
    let processes: { child: ChildProcess; base: string }[] = [];
    let key: string;
    let store: SqliteStore;

    beforeAll(async () => {
      store = new SqliteStore({ path: dbPath });
      await store.migrate();
      await seedTeam(store, 'team_solo');
      await putTeamRecord(store, 'team_solo');
      key = (await createIntegration(store, systemClock, { teams: ['team_solo'], name: 'Load' })).key;
      await store.write(async (tx) => {
        for (const id of ['lead_a', 'lead_b', 'lead_c']) {
          await tx.putRecord({
            kind: 'lead',
            id,
            team: 'team_solo',
            lead: null,
            board: null,
            stage: null,
            status: 'new',
            email: null,
            phone: null,
            version: 1,
            updatedAt: '2026-01-01T00:00:00.000Z',
            json: JSON.stringify({ id }),
          });
        }
      });
      // A limit a page of 3 spends in 1,000 requests: long enough for both processes' slices to follow their use.
      processes = await Promise.all([0, 1].map(() => startApi(dbPath, prefix, { itemsPerMinute: limit })));
    }, 60_000);

    afterAll(async () => {
      for (const p of processes) p.child.kill('SIGTERM');
      await store?.close();
      const redis = new Redis(REDIS_URL as string);
      const leftovers = await redis.keys(`${prefix}*`);
      if (leftovers.length) await redis.del(...leftovers);
      redis.disconnect();
      rmSync(dir, { recursive: true, force: true });
    });

    it('items served in one window stay within the limit, and every answer carries headers the contract allows', async () => {
      let items = 0;
      const problems: string[] = [];
      const loop = async (base: string) => {
        for (;;) {
          const res = await fetch(`${base}/leads?limit=3`, {
            headers: { authorization: `Bearer ${key}`, 'service-team': 'team_solo' },
          });
          if (res.status === 429) {
            const body = (await res.json()) as { code: string };
            if (body.code !== 'rate_limited') problems.push(`429 ${body.code}`);
            if (!(Number(res.headers.get('retry-after')) >= 1)) problems.push('429 without Retry-After');
            return;
          }
          const page = (await res.json()) as { data: unknown[] };
          if (res.status !== 200) problems.push(`status ${res.status}`);
          items += page.data.length;
          const remaining = Number(/"items-minute";r=(\d+);/.exec(res.headers.get('ratelimit') ?? '')?.[1]);
          if (!(remaining >= 0 && remaining <= limit)) problems.push(`RateLimit ${res.headers.get('ratelimit')}`);
        }
      };
      await Promise.all(processes.flatMap((p) => Array.from({ length: 6 }, () => loop(p.base))));
      expect(problems).toEqual([]);
      expect(items).toBeLessThanOrEqual(limit);
      // Refused only once little is left: at most one slice (an eighth of the limit) held by the other process,
      // and the pages in flight.
      expect(items).toBeGreaterThanOrEqual(limit - limit / 8 - 2 * 6 * 3);
    }, 60_000);
  },
);
