import type { LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { toApiError } from '../../src/http/problem.js';
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.js';
import { StoreUnavailableError, toStoreError } from '../../src/store/unavailable.js';
import { expectProblem } from '../http/expect-problem.js';
import { KEY_A, lead, put, TEAM_A, team } from '../http/fixtures.js';
import { auth } from '../http/harness.js';
import { type LoggedApp, loggedApp } from '../support/logged-app.js';
import { putMeta } from '../support/meta.js';
import { makeTestPostgresStore } from '../support/postgres.js';

// Against a real PostgreSQL: list requests run through the HTTP app while the store's own
// backends are terminated under them, the pool runs dry or a statement runs out of time. A lock on the
// test schema's `records` table, held by a connection of the test's own, parks the list queries inside
// PostgreSQL, so "mid-query" is certain rather than a matter of timing. Only backends whose
// application_name is this store's are ever terminated.

const PG_URL = process.env.PG_URL;
const describePg = PG_URL ? describe : describe.skip;
const title = (t: string) => (PG_URL ? t : `${t} (skipped: PostgreSQL is not enabled: set PG_URL)`);
const url = PG_URL as string;

const LEADS = ['lead_A01', 'lead_A02', 'lead_A03'];

/** Runs one statement on a connection of its own. */
async function admin<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url, application_name: 'crm-export-fault-test' });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Terminates every backend named `applicationName` (the store's own); how many there were. */
async function terminate(applicationName: string): Promise<number> {
  const rows = await admin<{ n: string }>(
    `SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity
     WHERE application_name = $1 AND pid <> pg_backend_pid()`,
    [applicationName],
  );
  return Number(rows[0]?.n);
}

/** Waits until `count` backends of `applicationName` wait for a lock (their query runs, parked). */
async function parked(applicationName: string, count: number): Promise<void> {
  await expect
    .poll(
      async () =>
        Number(
          (
            await admin<{ n: string }>(
              `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
              [applicationName],
            )
          )[0]?.n,
        ),
      { timeout: 5000, interval: 20 },
    )
    .toBe(count);
}

/** Holds an exclusive lock on the schema's records table until `release()`: every list query waits. */
async function lockRecords(schema: string): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url, application_name: 'crm-export-fault-test' });
  await client.connect();
  await client.query('BEGIN');
  await client.query(`LOCK TABLE ${schema}.records IN ACCESS EXCLUSIVE MODE`);
  return {
    release: async () => {
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}

function expectUnavailable(res: LightMyRequestResponse, retryAfter: string): void {
  expectProblem(res, 503, 'service_unavailable');
  expect(res.headers['retry-after']).toBe(retryAfter);
}

describePg(title('PostgreSQL faults under the HTTP app'), () => {
  let store: PostgresStore;
  let logged: LoggedApp;
  /** Uncaught exceptions of this process while a test runs (an 'error' event nobody listened for). */
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);
  const list = () => logged.app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A) });
  const others: { store: PostgresStore; logged: LoggedApp }[] = [];

  /** Another process on the same schema, with its own pool settings and application_name. */
  async function other(name: string, options: Omit<PostgresStoreOptions, 'url' | 'schema'>) {
    const s = new PostgresStore({ url, schema: store.schema, applicationName: `${store.schema}_${name}`, ...options });
    const entry = { store: s, logged: await loggedApp(s) };
    others.push(entry);
    return { ...entry, list: () => entry.logged.app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A) }) };
  }

  beforeAll(async () => {
    store = await makeTestPostgresStore(url, { poolSize: 4 });
    await put(store, 'team', team(TEAM_A));
    for (const id of LEADS) await put(store, 'lead', lead(id, TEAM_A));
    logged = await loggedApp(store);
    process.on('uncaughtException', onUncaught);
  });
  afterAll(async () => {
    process.off('uncaughtException', onUncaught);
    await logged?.app.close();
    await store?.close();
  });
  beforeEach(() => {
    uncaught.length = 0;
    logged.lines.length = 0;
  });
  afterEach(async () => {
    for (const o of others.splice(0)) {
      await o.logged.app.close();
      await o.store.close();
    }
    expect(uncaught).toEqual([]);
  });

  it('backends terminated under running list queries: those requests answer 503 with Retry-After 1, the process lives on, the pool heals', async () => {
    // Warm the pool: every connection open and idle before the fault.
    await Promise.all([list(), list(), list(), list()]);
    const lock = await lockRecords(store.schema);
    let pending: Promise<LightMyRequestResponse[]>;
    try {
      pending = Promise.all([list(), list(), list()]);
      await parked(store.schema, 3);
      expect(await terminate(store.schema)).toBeGreaterThanOrEqual(3);
    } finally {
      await lock.release();
    }
    for (const res of await pending) expectUnavailable(res, '1');
    // Each failure is one warning naming the SQLSTATE of a terminated backend; nothing at error level.
    expect(logged.problems().map((l) => [l.level, l.msg, l.err?.code, l.err?.reason])).toEqual(
      Array(3).fill([40, 'database unavailable', '57P01', 'connection_lost']),
    );
    // The broken clients are gone; new connections serve the next requests (idle ones terminated too).
    await expect.poll(async () => (await list()).statusCode, { timeout: 3000 }).toBe(200);
    const after = await Promise.all([list(), list(), list(), list(), list(), list()]);
    for (const res of after) {
      expect(res.statusCode).toBe(200);
      expect((JSON.parse(res.body) as { data: unknown[] }).data).toHaveLength(LEADS.length);
    }
  });

  it('backends terminated every 50 ms under a load of list requests: every answer is 200 or 503 with Retry-After, never 500', async () => {
    const statuses = new Map<number, number>();
    let running = true;
    const worker = async () => {
      while (running) {
        const res = await list();
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        if (res.statusCode !== 200) expectUnavailable(res, '1');
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    for (let i = 0; i < 15; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      await terminate(store.schema);
    }
    running = false;
    await Promise.all(workers);
    expect([...statuses.keys()].sort()).toEqual([200, 503]);
    expect(logged.problems().every((l) => l.level === 40 && l.msg === 'database unavailable')).toBe(true);
    await expect.poll(async () => (await list()).statusCode, { timeout: 3000 }).toBe(200);
  });

  it('a backend terminated while a write transaction holds its connection between statements: the write fails as unavailable, the process lives on', async () => {
    // The connection ends with no query running on it, so pg reports the loss only as an 'error' event on a
    // checked-out client: the event that used to end the process.
    let reached!: () => void;
    const inside = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let resume!: () => void;
    const gate = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const writing = store.write(async (tx) => {
      await tx.setMeta('fault_test', 'first');
      reached();
      await gate;
      await tx.setMeta('fault_test', 'second');
    });
    const failed = writing.catch((error: unknown) => error);
    await inside;
    expect(await terminate(store.schema)).toBeGreaterThanOrEqual(1);
    // Let the loss arrive while the transaction still holds the client.
    await new Promise((resolve) => setTimeout(resolve, 200));
    resume();
    const error = await failed;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as StoreUnavailableError).reason).toBe('connection_lost');
    // Nothing of it was committed; the store goes on with new connections.
    expect(await store.getMeta('fault_test')).toBeUndefined();
    await putMeta(store, 'fault_test', 'after');
    expect(await store.getMeta('fault_test')).toBe('after');
    expect((await list()).statusCode).toBe(200);
  });

  it('idle connections terminated between requests cost nothing once the pool notices: the next requests succeed', async () => {
    await Promise.all([list(), list(), list()]);
    expect(await terminate(store.schema)).toBeGreaterThanOrEqual(1);
    // The pool drops a client as soon as its connection reports the end (an idle client's 'error').
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const res of await Promise.all([list(), list(), list()])) expect(res.statusCode).toBe(200);
    expect(logged.problems()).toEqual([]);
  });

  it('a statement timeout (57014) answers 503 with Retry-After 2', async () => {
    const impatient = await other('timeout', { statementTimeoutMs: 300 });
    const lock = await lockRecords(store.schema);
    try {
      const res = await impatient.list();
      expectUnavailable(res, '2');
      expect(impatient.logged.problems().map((l) => [l.err?.code, l.err?.reason])).toEqual([['57014', 'busy']]);
    } finally {
      await lock.release();
    }
    expect((await impatient.list()).statusCode).toBe(200);
  });

  it('an exhausted pool answers 503 with Retry-After 2 once its connect timeout passes', async () => {
    const narrow = await other('narrow', { poolSize: 1, connectTimeoutMs: 300 });
    const lock = await lockRecords(store.schema);
    let first: Promise<LightMyRequestResponse>;
    try {
      // The one connection parks in the first request; the second waits for the pool and gives up.
      first = narrow.list();
      await parked(`${store.schema}_narrow`, 1);
      const second = await narrow.list();
      expectUnavailable(second, '2');
      expect(narrow.logged.problems().map((l) => l.err?.reason)).toEqual(['busy']);
    } finally {
      await lock.release();
    }
    expect((await first).statusCode).toBe(200);
  });

  it('a database that refuses sessions (55000 not accepting connections, 3D000 dropped) answers 503 with Retry-After 5, and heals', {
    // Creating and dropping a database waits on the shared server's checkpoint and file sync, which other
    // test files writing at the same time can stretch past the default 30 s.
    timeout: 120_000,
  }, async () => {
    // A database of this test's own on the shared server, so switching it off touches nobody else.
    const name = `crm_export_faults_${store.schema}`;
    const own = new URL(url);
    own.pathname = `/${name}`;
    await admin(`CREATE DATABASE ${name}`);
    const applicationName = `${store.schema}_refused`;
    const s = new PostgresStore({ url: own.toString(), applicationName, connectTimeoutMs: 2000 });
    try {
      await s.migrate();
      await put(s, 'team', team(TEAM_A));
      const app = await loggedApp(s);
      const get = (path: string) => app.app.inject({ method: 'GET', url: path, headers: auth(KEY_A) });
      try {
        expect((await get('/v1/leads')).statusCode).toBe(200);
        await admin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        await terminate(applicationName);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expectUnavailable(await get('/v1/leads'), '5');
        expectUnavailable(await get('/v1/health'), '5');
        await admin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
        expect((await get('/v1/leads')).statusCode).toBe(200);
        await admin(`DROP DATABASE ${name} WITH (FORCE)`);
        expectUnavailable(await get('/v1/leads'), '5');
        expect(app.problems().map((l) => [l.level, l.err?.code])).toEqual([
          [40, '55000'],
          [40, '55000'],
          [40, '3D000'],
        ]);
      } finally {
        await app.app.close();
      }
    } finally {
      await s.close();
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  });

  it('a closed store answers 503 with Retry-After 5', async () => {
    const closing = await other('closing', {});
    expect((await closing.list()).statusCode).toBe(200);
    await closing.store.close();
    expectUnavailable(await closing.list(), '5');
  });

  it('errors of a real PostgreSQL: a syntax error stays 500, a terminated backend is 503', async () => {
    const client = new pg.Client({ connectionString: url, application_name: `${store.schema}_raw` });
    client.on('error', () => undefined);
    await client.connect();
    const syntax = await client.query('SELEC 1').catch((error: unknown) => error);
    expect(toStoreError(syntax)).toBe(syntax);
    expect(toApiError(toStoreError(syntax)).code).toBe('internal_error');
    const sleeping = client.query('SELECT pg_sleep(30)').catch((error: unknown) => error);
    await expect
      .poll(
        async () =>
          (
            await admin(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event = 'PgSleep'`, [
              `${store.schema}_raw`,
            ])
          ).length,
      )
      .toBe(1);
    await terminate(`${store.schema}_raw`);
    const lost = toStoreError(await sleeping);
    expect(lost).toBeInstanceOf(StoreUnavailableError);
    expect(toApiError(lost)).toMatchObject({ code: 'service_unavailable', retryAfter: 1 });
    await client.end().catch(() => undefined);
  });
});
