// A PostgreSQL mirror whose connection ends (a terminated backend, a failover) costs at most the
// page being written, never the process. Only the mirror's own backends are terminated: its connections
// carry its schema's name as application_name (support/mirror-harness.ts).
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeServer, leadObject, startFakeServer } from './support/fake-server.js';
import { type Harness, mirrorHarness } from './support/mirror-harness.js';

const PG_URL = process.env.PG_URL;
const T = 'team_a';

/** Runs one statement on a connection of the test's own. */
async function admin(text: string, values: unknown[] = []): Promise<pg.QueryResultRow[]> {
  const client = new pg.Client({ connectionString: PG_URL, application_name: 'crm-export-mirror-fault-test' });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Terminates the backends named `applicationName`; how many there were. */
async function terminate(applicationName: string): Promise<number> {
  const [row] = await admin(
    `SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity
     WHERE application_name = $1 AND pid <> pg_backend_pid()`,
    [applicationName],
  );
  return Number(row?.n);
}

describe.skipIf(!PG_URL)(
  `a PostgreSQL mirror whose connection is terminated${PG_URL ? '' : ' (skipped: set PG_URL)'}`,
  () => {
    let fake: FakeServer;
    let h: Harness;
    let schema: string;
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);

    beforeEach(async () => {
      uncaught.length = 0;
      process.on('uncaughtException', onUncaught);
      fake = await startFakeServer([T]);
      h = await mirrorHarness(fake, 'postgres');
      schema = (await sql<{ s: string }>`SELECT current_schema() AS s`.execute(h.mirror.db)).rows[0]?.s as string;
    });
    afterEach(async () => {
      process.off('uncaughtException', onUncaught);
      await h.mirror.close();
      await fake.close();
    });

    it('while the sync engine is idle: the process lives on and the next sync succeeds', async () => {
      fake.put(T, 'lead', leadObject('lead_1'));
      expect(await h.engine().run()).toEqual({ [T]: 'caught_up' });
      expect(await terminate(schema)).toBeGreaterThanOrEqual(1);
      await new Promise((resolve) => setTimeout(resolve, 100));
      fake.put(T, 'lead', leadObject('lead_2'));
      expect(await h.engine().run()).toEqual({ [T]: 'caught_up' });
      expect((await h.rows()).map((r) => r.id)).toEqual(['lead_1', 'lead_2']);
      expect(uncaught).toEqual([]);
    });

    it('while the sync engine writes a page: that run fails, the page is not half-written, the next run succeeds', async () => {
      for (const id of ['lead_1', 'lead_2', 'lead_3']) fake.put(T, 'lead', leadObject(id));
      // A lock held by the test parks the page's insert inside PostgreSQL: the termination lands mid-write.
      const locker = new pg.Client({ connectionString: PG_URL, application_name: 'crm-export-mirror-fault-test' });
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE ${schema}.mirror_records IN ACCESS EXCLUSIVE MODE`);
      let outcome: Promise<unknown>;
      try {
        outcome = h
          .engine()
          .run()
          .then(
            () => 'finished',
            (error: unknown) => error,
          );
        await expect
          .poll(
            async () =>
              (
                await admin(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [
                  schema,
                ])
              ).length,
            { timeout: 5000, interval: 20 },
          )
          .toBe(1);
        expect(await terminate(schema)).toBeGreaterThanOrEqual(1);
      } finally {
        await locker.query('ROLLBACK');
        await locker.end();
      }
      expect(await outcome).toBeInstanceOf(Error);
      expect(await h.rows()).toEqual([]);
      expect((await h.cursor(T)) ?? null).toBeNull();
      expect(await h.engine().run()).toEqual({ [T]: 'caught_up' });
      expect((await h.rows()).map((r) => r.id)).toEqual(['lead_1', 'lead_2', 'lead_3']);
      expect(uncaught).toEqual([]);
    });
  },
);
