import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createIntegration } from '../../src/access/integrations.js';
import { ManualClock } from '../../src/clock.js';
import { runDemo } from '../../src/demo/run-demo.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { opsGet, sample } from '../operator-listener/scrape.js';
import { freePort, HAS_REDIS_SERVER, type OwnRedis, startOwnRedis } from './own-redis.js';

// A Redis that answers every charge with an error (out of memory, a read-only replica after a failover, a
// command it refuses) is as visible as one that is gone (docs/limits.md, "When Redis fails"): the limits
// count in this process's memory, /readyz says `"redis":"away"`, `redis_up` is 0, `redis_away_total` counts
// an `error reply`, and a warn line names the reply's code, never a key. A probe that writes (not a PING,
// which such a Redis still answers) brings Redis back only once it accepts writes again. Every test runs its
// own redis-server and changes its configuration; the shared Redis is never touched.

const BUDGET = 250;

interface Line {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

/** A logger for startServer that keeps every line (pino's call shapes: fields and message, or a message). */
function recorder() {
  const lines: Line[] = [];
  const at =
    (level: string) =>
    (fields: unknown, message?: string): void => {
      if (typeof fields === 'string') lines.push({ level, message: fields, fields: {} });
      else lines.push({ level, message: message ?? '', fields: (fields ?? {}) as Record<string, unknown> });
    };
  const logger = {
    level: 'info',
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    debug: at('debug'),
    trace: at('trace'),
    fatal: at('fatal'),
    child: () => logger,
  };
  return {
    logger: logger as never,
    lines,
    away: () => lines.filter((l) => l.level === 'warn' && l.message.startsWith('redis away')),
    back: () => lines.filter((l) => l.level === 'info' && l.message.startsWith('redis back')),
  };
}

async function until(check: () => Promise<boolean> | boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!HAS_REDIS_SERVER)(
  `a Redis answering with errors (own redis-server)${HAS_REDIS_SERVER ? '' : ' (skipped: redis-server not on PATH)'}`,
  () => {
    const clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));
    let redis: OwnRedis;
    let admin: Redis;
    const servers: RunningServer[] = [];

    beforeAll(async () => {
      redis = await startOwnRedis();
      admin = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    });
    afterEach(async () => {
      for (const server of servers.splice(0)) await server.close();
      // Back to a Redis that accepts everything.
      await admin.config('SET', 'maxmemory', '0');
      await admin.replicaof('NO', 'ONE');
      await admin.call('ACL', 'SETUSER', 'default', 'on', 'nopass', '~*', '&*', '+@all');
    });
    afterAll(async () => {
      admin?.disconnect();
      await redis?.close();
    });

    /** A server (it closes its store) on a small demo database, with a key of its team. */
    const serve = async () => {
      const store = new SqliteStore({ path: ':memory:' });
      await store.migrate();
      const demo = await runDemo(store, { seed: 3, teams: 1, leads: 4, now: clock.now() - 3_600_000, clock });
      const team = demo.teams[0] as string;
      const { key } = await createIntegration(store, clock, { teams: [team], name: 'redis errors' });
      const log = recorder();
      const server = await startServer({
        store,
        host: '127.0.0.1',
        port: 0,
        clock,
        limits: { ...DEFAULT_LIMITS, redisBudgetMs: BUDGET, redisProbeMs: 100 },
        logger: log.logger,
        redisUrl: redis.url,
        handleSignals: false,
        feedJobs: false,
        ops: { host: '127.0.0.1', port: 0 },
      });
      servers.push(server);
      const ops = server.opsOrigin as string;
      const get = async (path: string) =>
        (await fetch(`${server.origin}${path}`, { headers: { authorization: `Bearer ${key}`, 'service-team': team } }))
          .status;
      const state = async () => {
        const [readyz, metrics] = await Promise.all([opsGet(ops, '/readyz'), opsGet(ops, '/metrics')]);
        return {
          ready: readyz.status,
          redis: (JSON.parse(readyz.body) as { redis: string }).redis,
          redisUp: sample(metrics.body, 'crm_export_redis_up'),
          errorReplies: sample(metrics.body, 'crm_export_redis_away_total', { reason: 'error reply' }) ?? 0,
        };
      };
      return { log, get, state, key, team };
    };

    it('a Redis out of memory marks the limits away (readiness, redis_up, redis_away_total, one warn line with the reply code and no key) until it accepts writes again', async () => {
      const { log, get, state, key, team } = await serve();
      expect(await get('/v1/leads?limit=2')).toBe(200);
      expect(await state()).toEqual({ ready: 200, redis: 'up', redisUp: 1, errorReplies: 0 });

      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', '1');
      // The API still answers: the charge counts in this process's memory.
      for (let i = 0; i < 3; i++) expect(await get('/v1/leads?limit=2')).toBe(200);
      // Still ready (the API answers), with Redis reported away.
      expect(await state()).toEqual({ ready: 200, redis: 'away', redisUp: 0, errorReplies: 1 });
      expect(log.away()).toHaveLength(1);
      expect(log.away()[0]?.fields).toMatchObject({ reason: 'error reply', detail: 'OOM' });
      // No key, no counter key, no team in the line.
      const text = JSON.stringify(log.away());
      for (const secret of [key, 'crmx:', team]) expect(text).not.toContain(secret);
      // Redis still answers PING, but the probe's write is refused: it stays away without flapping.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(await get('/v1/leads?limit=2')).toBe(200);
      expect(await state()).toEqual({ ready: 200, redis: 'away', redisUp: 0, errorReplies: 1 });
      expect(log.back()).toHaveLength(0);

      await admin.config('SET', 'maxmemory', '0');
      await until(async () => (await state()).redis === 'up');
      expect(log.back()).toHaveLength(1);
      expect(await get('/v1/leads?limit=2')).toBe(200);
      expect(await state()).toEqual({ ready: 200, redis: 'up', redisUp: 1, errorReplies: 1 });
    }, 30_000);

    it('a read-only Redis (a replica after a failover) marks the limits away with its READONLY reply, and back once it is a primary again', async () => {
      const { log, get, state } = await serve();
      expect(await get('/v1/me')).toBe(200);
      // A replica of a primary that does not exist: it answers reads and PING, refuses every write.
      await admin.replicaof('127.0.0.1', String(await freePort()));
      expect(await get('/v1/me')).toBe(200);
      expect(await state()).toEqual({ ready: 200, redis: 'away', redisUp: 0, errorReplies: 1 });
      expect(log.away()[0]?.fields).toMatchObject({ reason: 'error reply', detail: 'READONLY' });
      await admin.replicaof('NO', 'ONE');
      await until(async () => (await state()).redis === 'up');
      expect(log.back()).toHaveLength(1);
    }, 30_000);

    it('a Redis that refuses the charge but accepts the probe is counted each time it fails, and logged at most once a minute', async () => {
      const { log, get, state } = await serve();
      expect(await get('/v1/me')).toBe(200);
      // Scripts refused (NOPERM), plain writes allowed: each probe brings Redis back, each request loses it.
      await admin.call('ACL', 'SETUSER', 'default', '-@scripting');
      let outages = 0;
      for (let i = 0; i < 4; i++) {
        await until(async () => (await state()).redis === 'up');
        expect(await get('/v1/me')).toBe(200);
        outages += 1;
        expect(await state()).toMatchObject({ redis: 'away', redisUp: 0, errorReplies: outages });
      }
      expect(log.away()).toHaveLength(1);
      expect(log.away()[0]?.fields).toMatchObject({ reason: 'error reply', detail: 'NOPERM' });
      // Only the first outage's end is logged: the end of one whose start was not logged is not either.
      expect(log.back()).toHaveLength(1);
    }, 30_000);
  },
);
