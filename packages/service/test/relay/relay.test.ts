import { spawn } from 'node:child_process';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IntakeClient } from '../../src/relay/intake-client.js';
import { Outbox } from '../../src/relay/outbox.js';
import { backoffMs, runRelay } from '../../src/relay/relay.js';
import { listenMetrics, RelayMetrics } from '../../src/relay/relay-metrics.js';
import { REPO_ROOT, runCli } from '../cli/cli.js';
import { type CrmOutbox, makeCrmOutbox } from './crm-outbox.js';
import { type FakeIntake, startFakeIntake } from './fake-intake.js';

// `crm-export relay` against the real PostgreSQL (the CRM's outbox) and an intake stand-in that keeps the
// wire protocol's rules (fake-intake.ts). The relay against the service itself: relay-kill.test.ts.

const PG_URL = process.env.PG_URL;
const BIN = join(REPO_ROOT, 'packages/service/bin/crm-export.js');

const until = async (check: () => boolean, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const event = (n: number) => ({ type: 'test.event', n });

describe('backoff', () => {
  it('waits between half and all of a doubling wait, capped, and never less than Retry-After', () => {
    expect(backoffMs(1, 30_000, undefined, () => 0)).toBe(50);
    expect(backoffMs(1, 30_000, undefined, () => 1)).toBe(100);
    expect(backoffMs(4, 30_000, undefined, () => 1)).toBe(800);
    expect(backoffMs(40, 30_000, undefined, () => 0)).toBe(15_000);
    expect(backoffMs(40, 30_000, undefined, () => 1)).toBe(30_000);
    expect(backoffMs(1, 30_000, 2000, () => 0)).toBe(2000);
    expect(backoffMs(1, 30_000, 2000, () => 1)).toBeGreaterThan(2000);
  });
});

describe.skipIf(!PG_URL)(
  `crm-export relay${PG_URL ? '' : ' (skipped: the outbox is in PostgreSQL: set PG_URL)'}`,
  { timeout: 120_000 },
  () => {
    let crm: CrmOutbox;
    let intake: FakeIntake;
    beforeEach(async () => {
      crm = await makeCrmOutbox(PG_URL as string);
      intake = await startFakeIntake();
    });
    afterEach(async () => {
      await intake.close();
      await crm.drop();
    });

    /** The relay in this process until `stop()`. */
    function relayHere(options: { batch?: number; once?: boolean } = {}) {
      const outbox = new Outbox(crm.url, crm.table);
      const stop = new AbortController();
      const done = runRelay({
        outbox,
        intake: new IntakeClient({ url: intake.origin, token: intake.token }),
        source: 'crm-main',
        batch: options.batch ?? 100,
        pollIntervalMs: 20,
        maxBackoffMs: 2000,
        once: options.once ?? false,
        logger: pino({ level: 'silent' }),
        metrics: new RelayMetrics(),
        signal: stop.signal,
      }).finally(() => outbox.close());
      return {
        done,
        stop: async () => {
          stop.abort();
          return done;
        },
      };
    }

    it('never skips a row whose transaction commits after a later id was read, and never reorders', async () => {
      const [first] = await crm.insert(event(1));
      const late = await crm.open(event(2));
      const after = await crm.insert(event(3), event(4));
      const relay = relayHere();
      try {
        await until(() => intake.applied().length === 1);
        // The open transaction holds the next id: the rows after it wait, however long.
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(intake.applied()).toEqual([first]);
        await late.commit();
        await until(() => intake.applied().length === 4);
        expect(intake.applied()).toEqual([first, late.id, ...after]);
      } finally {
        expect(await relay.stop()).toBe(0);
      }
    });

    it('passes the hole a rolled-back transaction leaves, once that transaction has ended', async () => {
      const aborted = await crm.open(event(1));
      const after = await crm.insert(event(2));
      const relay = relayHere();
      try {
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(intake.applied()).toEqual([]);
        await aborted.rollback();
        await until(() => intake.applied().length === 1);
        expect(intake.applied()).toEqual(after);
      } finally {
        await relay.stop();
      }
    });

    it('exposes its lag (rows and seconds behind) and its position as Prometheus metrics', async () => {
      const held = await crm.open(event(1));
      await crm.insert(event(2), event(3));
      const metrics = new RelayMetrics();
      const listener = await listenMetrics(metrics, '127.0.0.1', 0);
      const outbox = new Outbox(crm.url, crm.table);
      const stop = new AbortController();
      const done = runRelay({
        outbox,
        intake: new IntakeClient({ url: intake.origin, token: intake.token }),
        source: 'crm-main',
        batch: 100,
        pollIntervalMs: 20,
        maxBackoffMs: 2000,
        once: false,
        logger: pino({ level: 'silent' }),
        metrics,
        signal: stop.signal,
      }).finally(() => outbox.close());
      const scrape = async () => (await fetch(`${listener.origin}/metrics`)).text();
      const value = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
      try {
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const behind = await scrape();
        expect(value(behind, 'crm_export_relay_lag_rows')).toBe(2);
        expect(value(behind, 'crm_export_relay_lag_seconds')).toBeGreaterThan(0);
        expect(value(behind, 'crm_export_relay_position')).toBe(0);
        await held.commit();
        await until(() => intake.applied().length === 3);
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const caughtUp = await scrape();
        expect(value(caughtUp, 'crm_export_relay_lag_rows')).toBe(0);
        expect(value(caughtUp, 'crm_export_relay_lag_seconds')).toBe(0);
        expect(value(caughtUp, 'crm_export_relay_position')).toBe(intake.applied()[2]);
        expect(caughtUp).toMatch(/^crm_export_relay_events_total\{outcome="applied"\} 3$/m);
        expect((await fetch(`${listener.origin}/livez`)).status).toBe(200);
      } finally {
        stop.abort();
        await done;
        await listener.close();
      }
    });

    it("stops with an error when the outbox's ids are behind the service's last seq (a restored CRM database)", async () => {
      await crm.insert(event(1), event(2));
      intake.setLast('crm-main', 50);
      const result = await runCli(
        ['relay', '--outbox-url', crm.url, '--outbox-table', crm.table, '--intake-url', intake.origin],
        { env: { CRM_EXPORT_INTAKE_TOKEN: intake.token } },
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("the outbox's ids are behind the service's last_seq");
      expect(intake.posts).toEqual([]);
    });

    it('refuses a table whose id default takes the id before the transaction has an id (a row could be skipped)', async () => {
      const plain = await makeCrmOutbox(PG_URL as string, {
        definition: (table) =>
          `CREATE TABLE ${table} (id bigserial PRIMARY KEY, event jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
      });
      try {
        const result = await runCli(
          ['relay', '--outbox-url', plain.url, '--outbox-table', plain.table, '--intake-url', intake.origin, '--once'],
          { env: { CRM_EXPORT_INTAKE_TOKEN: intake.token } },
        );
        expect(result.code).toBe(1);
        expect(result.stderr).toContain('takes its value with nextval alone');
        expect(intake.posts).toEqual([]);
      } finally {
        await plain.drop();
      }
    });

    it('--once relays the rows committed at its start in batches that each follow the one before, then exits 0', async () => {
      const ids = await crm.insert(...range(1, 7).map(event));
      const args = ['relay', '--outbox-url', crm.url, '--outbox-table', crm.table, '--intake-url', intake.origin];
      const result = await runCli([...args, '--batch', '3', '--once'], {
        env: { CRM_EXPORT_INTAKE_TOKEN: intake.token, LOG_LEVEL: 'info' },
      });
      expect(result.code).toBe(0);
      expect(intake.applied()).toEqual(ids);
      expect(intake.posts.map((p) => [p.follows, p.seqs])).toEqual([
        [0, ids.slice(0, 3)],
        [ids[2], ids.slice(3, 6)],
        [ids[5], ids.slice(6)],
      ]);
      expect(intake.events()[0]).toEqual({ seq: ids[0], type: 'test.event', n: 1 });
      // The token is never logged.
      expect(result.stderr).not.toContain(intake.token);
      expect(result.stderr).toContain('relay caught up');
      // Run again: nothing left, nothing posted.
      const again = await runCli([...args, '--once'], { env: { CRM_EXPORT_INTAKE_TOKEN: intake.token } });
      expect(again.code).toBe(0);
      expect(intake.posts).toHaveLength(3);
    });

    it('a relay killed at any point resumes from the position the service holds: every row once, in order', {
      // Each relay process starts anew: seconds each on a busy machine.
      timeout: 240_000,
    }, async () => {
      const ids = await crm.insert(...range(1, 24).map(event));
      const args = [BIN, 'relay', '--outbox-url', crm.url, '--outbox-table', crm.table, '--intake-url', intake.origin];
      let kills = 0;
      while (intake.applied().length < ids.length) {
        // One row a post, killed within 20 ms of its first delivery: a quick relay still has rows left.
        const child = spawn(process.execPath, [...args, '--batch', '1', '--poll-interval', '20'], {
          cwd: REPO_ROOT,
          env: { ...process.env, CRM_EXPORT_INTAKE_TOKEN: intake.token, LOG_LEVEL: 'warn' },
          stdio: 'ignore',
        });
        const exited = new Promise((resolve) => child.on('exit', resolve));
        const before = intake.applied().length;
        await until(() => intake.applied().length > before || intake.applied().length === ids.length, 30_000);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 20));
        child.kill('SIGKILL');
        await exited;
        kills += 1;
      }
      expect(kills).toBeGreaterThan(1);
      expect(intake.applied()).toEqual(ids);
      // Every post after a restart follows what the service held; none was refused with a gap.
      expect(intake.posts.filter((p) => p.status === 409)).toEqual([]);
    });

    it('backs off on 503 and 429, waiting at least Retry-After, then delivers', async () => {
      const ids = await crm.insert(event(1), event(2));
      intake.refuse(2, 503, 1);
      const relay = relayHere();
      try {
        await until(() => intake.applied().length === 2);
      } finally {
        await relay.stop();
      }
      expect(intake.applied()).toEqual(ids);
      const [a, b, c] = intake.posts;
      expect([a?.status, b?.status, c?.status]).toEqual([503, 503, 200]);
      expect(b!.at - a!.at).toBeGreaterThanOrEqual(1000);
      expect(c!.at - b!.at).toBeGreaterThanOrEqual(1000);

      intake.refuse(1, 429, 1);
      const [more] = await crm.insert(event(3));
      const again = relayHere();
      try {
        await until(() => intake.applied().length === 3);
      } finally {
        await again.stop();
      }
      expect(intake.applied()).toEqual([...ids, more]);
      const [busy, passed] = intake.posts.slice(-2);
      expect(busy?.status).toBe(429);
      expect(passed!.at - busy!.at).toBeGreaterThanOrEqual(1000);
    });

    it('backs off while the intake endpoint cannot be reached, then delivers', async () => {
      const ids = await crm.insert(event(1));
      const origin = intake.origin;
      await intake.close();
      const port = Number(new URL(origin).port);
      const outbox = new Outbox(crm.url, crm.table);
      const stop = new AbortController();
      const warnings: string[] = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
      const done = runRelay({
        outbox,
        intake: new IntakeClient({ url: origin, token: intake.token }),
        source: 'crm-main',
        batch: 10,
        pollIntervalMs: 20,
        maxBackoffMs: 400,
        once: false,
        logger,
        metrics: new RelayMetrics(),
        signal: stop.signal,
      }).finally(() => outbox.close());
      await until(() => warnings.length >= 2);
      expect(warnings.join('')).toContain('ECONNREFUSED');
      intake = await startFakeIntake(intake.token, port);
      try {
        await until(() => intake.applied().length === 1);
        expect(intake.applied()).toEqual(ids);
      } finally {
        stop.abort();
        await done;
      }
    });
  },
);
