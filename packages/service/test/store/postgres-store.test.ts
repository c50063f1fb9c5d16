import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { FeedEntry, RecordRow, WriteTx } from '../../src/store/store.js';
import { adminQuery, makeTestPostgresStore, uniqueSchema } from '../support/postgres.js';

// What only PostgreSQL has to prove: several processes (here: separate pools) share one database.
// The behaviour every backend shares is in store.test.ts.

const PG_URL = process.env.PG_URL;
const describePg = PG_URL ? describe : describe.skip;
const title = (t: string) => (PG_URL ? t : `${t} (skipped: PostgreSQL is not enabled: set PG_URL)`);
const url = PG_URL as string;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function entry(team: string, id: string, version = 1): FeedEntry {
  return { team, kind: 'lead', id, version, recordedAt: 1_767_225_600_000, body: '{}', removed: null };
}

function lead(id: string, team: string, version: number): RecordRow {
  const base = { lead: null, board: null, stage: null, status: 'new', email: null, phone: null };
  return { kind: 'lead', id, team, ...base, version, updatedAt: '2026-01-01T00:00:00.000Z', json: `{"v":${version}}` };
}

/** What the write side does for one change: read the record, write the next version, append it. */
async function bump(tx: WriteTx, team: string, id: string): Promise<number> {
  const version = ((await tx.getRecord('lead', id))?.version ?? 0) + 1;
  await tx.putRecord(lead(id, team, version));
  await tx.appendFeed(entry(team, id, version));
  return version;
}

describePg(title('PostgreSQL store shared by several processes'), () => {
  let store: PostgresStore;
  let others: PostgresStore[] = [];
  /** Another process on the same schema. */
  const other = (options: { statementTimeoutMs?: number } = {}) => {
    const s = new PostgresStore({ url, schema: store.schema, poolSize: 2, ...options });
    others.push(s);
    return s;
  };
  beforeEach(async () => {
    store = await makeTestPostgresStore(url);
  });
  afterEach(async () => {
    await Promise.all(others.map((s) => s.close()));
    others = [];
    await store.close();
  });

  it('a second writer to the same team waits until the first commits: positions follow commit order', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let locked!: () => void;
    const holdsLock = new Promise<void>((r) => {
      locked = r;
    });
    const first = store.write(async (tx) => {
      const pos = await tx.appendFeed(entry('t', 'lead_first'));
      locked();
      await gate;
      return pos;
    });
    // The first writer holds the team's feed head before the second starts, however slow the machine.
    await holdsLock;
    let secondDone = false;
    const second = other()
      .write((tx) => tx.appendFeed(entry('t', 'lead_second')))
      .then((pos) => {
        secondDone = true;
        return pos;
      });
    await sleep(200);
    expect(secondDone).toBe(false);
    expect(await store.readFeed('t', 0, 10)).toEqual([]);
    release();
    expect(await first).toBe(1);
    expect(await second).toBe(2);
    expect((await store.readFeed('t', 0, 10)).map((r) => [r.pos, r.id])).toEqual([
      [1, 'lead_first'],
      [2, 'lead_second'],
    ]);
  });

  it('a rolled-back writer leaves no gap: the next writer of the team takes its position', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let locked!: () => void;
    const holdsLock = new Promise<void>((r) => {
      locked = r;
    });
    const failing = store.write(async (tx) => {
      await tx.appendFeed(entry('t', 'lead_lost'));
      locked();
      await gate;
      throw new Error('rolled back');
    });
    await holdsLock;
    const next = other().write((tx) => tx.appendFeed(entry('t', 'lead_kept')));
    await sleep(100);
    release();
    await expect(failing).rejects.toThrow('rolled back');
    expect(await next).toBe(1);
    expect(await store.feedHead('t')).toBe(1);
  });

  it('concurrent read-modify-write of one record never loses a version, also when both create it', async () => {
    const writers = [store, other(), other(), other()];
    const versions = await Promise.all(
      writers.flatMap((w) =>
        Array.from({ length: 5 }, () =>
          w.write(async (tx) => {
            const v = await bump(tx, 't', 'lead_hot');
            await sleep(Math.random() * 10);
            return v;
          }),
        ),
      ),
    );
    expect([...versions].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect((await store.getRecord('lead', 'lead_hot'))?.version).toBe(20);
    expect((await store.readFeed('t', 0, 100)).map((r) => r.version)).toEqual(versions.map((_, i) => i + 1));
  });

  it('a setting two processes create at once is created once', async () => {
    const created = await Promise.all(
      [store, other(), other()].map((s, i) =>
        s.write(async (tx) => {
          const existing = await tx.getMeta('secret');
          if (existing !== undefined) return existing;
          await sleep(50);
          await tx.setMeta('secret', `value_${i}`);
          return `value_${i}`;
        }),
      ),
    );
    expect(new Set(created).size).toBe(1);
    expect(await store.getMeta('secret')).toBe(created[0]);
  });

  it('the statement timeout bounds a wait for a lock', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let locked!: () => void;
    const holdsLock = new Promise<void>((r) => {
      locked = r;
    });
    const holder = store.write(async (tx) => {
      await tx.appendFeed(entry('t', 'lead_holder'));
      locked();
      await gate;
    });
    await holdsLock;
    const impatient = other({ statementTimeoutMs: 200 });
    const started = Date.now();
    await expect(impatient.write((tx) => tx.appendFeed(entry('t', 'lead_waiter')))).rejects.toMatchObject({
      code: '57014',
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    release();
    await holder;
    expect(await store.feedHead('t')).toBe(1);
  });

  it('positions, keyset positions and times come back as numbers', async () => {
    const at = Date.now();
    await store.write(async (tx) => {
      await tx.putRecord(lead('lead_n', 't', 1));
      await tx.appendFeed({ ...entry('t', 'lead_n'), recordedAt: at });
    });
    const [row] = await store.readFeed('t', 0, 1);
    expect(row).toMatchObject({ pos: 1, version: 1, recordedAt: at });
    expect(typeof (await store.getRecord('lead', 'lead_n'))?.seq).toBe('number');
    expect(typeof (await store.listRecords({ team: 't', kind: 'lead', after: 0, limit: 1 }))[0]?.seq).toBe('number');
  });

  it('each schema sees only its own data', async () => {
    const second = await makeTestPostgresStore(url);
    try {
      await store.write((tx) => tx.putRecord(lead('lead_here', 't', 1)));
      expect(await second.getRecord('lead', 'lead_here')).toBeUndefined();
      expect(await store.getRecord('lead', 'lead_here')).toBeDefined();
    } finally {
      await second.close();
    }
  });
});

describePg(title('PostgreSQL migrations'), () => {
  it('several processes starting at once migrate one new schema safely', async () => {
    const schema = uniqueSchema();
    const stores = Array.from({ length: 4 }, () => new PostgresStore({ url, schema, poolSize: 1 }));
    try {
      await Promise.all(stores.map((s) => s.migrate()));
      await stores[0]?.write((tx) => tx.appendFeed(entry('t', 'lead_1')));
      expect(await stores[3]?.feedHead('t')).toBe(1);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await adminQuery(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
  });

  it('an unreachable database fails the health check instead of hanging', async () => {
    const down = new PostgresStore({ url: 'postgres://postgres@127.0.0.1:1/test' });
    try {
      await expect(down.ping()).rejects.toThrow();
    } finally {
      await down.close();
    }
  });

  it('refuses a schema name that is not a plain identifier', () => {
    expect(() => new PostgresStore({ url, schema: 'x; DROP TABLE feed' })).toThrow(/schema/);
  });
});

describePg(title('PostgreSQL plans'), () => {
  /** What these tests read past the store's interface: its pool (one connection) and its write transaction. */
  const internals = (store: PostgresStore) =>
    store as unknown as {
      pool: import('pg').Pool;
      transact<T>(fn: (trx: import('kysely').Kysely<unknown>) => Promise<T>): Promise<T>;
    };

  it('a page statement is planned once per connection: every call runs its generic plan, none is planned again', async (context) => {
    const schema = uniqueSchema();
    // One connection, so every call below runs in the session whose prepared statements are read after.
    const store = new PostgresStore({ url, schema, poolSize: 1 });
    const { pool } = internals(store);
    try {
      // pg_prepared_statements counts plans from PostgreSQL 14 on; the README allows 13.
      const version = await pool.query<{ server_version_num: string }>('SHOW server_version_num');
      if (Number(version.rows[0]?.server_version_num) < 140000) {
        context.skip('PostgreSQL 13 counts no plans per prepared statement');
      }
      await store.migrate();
      await store.write(async (tx) => {
        for (let i = 1; i <= 30; i++) await bump(tx, 'team_p', `lead_${i}`);
      });
      // Past the five calls after which PostgreSQL's default chooses between a generic and a custom plan.
      for (let after = 0; after < 12; after++) await store.listPage({ team: 'team_p', kind: 'lead', after, limit: 5 });
      const { rows } = await pool.query<{ generic_plans: string; custom_plans: string }>(
        `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%string_agg(json%'`,
      );
      expect(rows.length).toBeGreaterThan(0);
      const sum = (key: 'generic_plans' | 'custom_plans') => rows.reduce((n, row) => n + Number(row[key]), 0);
      expect(sum('custom_plans')).toBe(0);
      expect(sum('generic_plans')).toBeGreaterThanOrEqual(12);
    } finally {
      await store.close();
      await adminQuery(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
  });

  it('write transactions keep the plan choice PostgreSQL makes by default, and the session its generic plans after them', async () => {
    const store = new PostgresStore({ url, schema: uniqueSchema(), poolSize: 1 });
    const { pool } = internals(store);
    const mode = async () => (await pool.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode')).rows[0];
    try {
      expect(await mode()).toEqual({ plan_cache_mode: 'force_generic_plan' });
      const inside = await internals(store).transact(
        async (trx) => (await sql<{ plan_cache_mode: string }>`SHOW plan_cache_mode`.execute(trx)).rows[0],
      );
      expect(inside).toEqual({ plan_cache_mode: 'auto' });
      expect(await mode()).toEqual({ plan_cache_mode: 'force_generic_plan' });
    } finally {
      await store.close();
    }
  });
});
