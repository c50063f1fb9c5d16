import { type AddressInfo, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toApiError } from '../../src/http/problem.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import {
  StoreUnavailableError,
  toStoreError,
  type UnavailableReason,
  unavailableReason,
} from '../../src/store/unavailable.js';
import { loggedApp } from '../support/logged-app.js';
import { expectProblem } from './expect-problem.js';
import { KEY_A, lead, put, TEAM_A, team } from './fixtures.js';
import { auth } from './harness.js';

// A database fault that passes answers 503 service_unavailable with Retry-After, a bug stays
// 500 internal_error. The store classifies its driver's errors (store/unavailable.ts); the HTTP layer
// only maps the store's verdict. The faults of a real PostgreSQL are in test/store/database-faults.test.ts.

const withCode = (code: string, message = 'driver error') => Object.assign(new Error(message), { code });

describe('the classifier of driver errors', () => {
  const temporary: [string, unknown, UnavailableReason][] = [
    [
      '57P01 a terminated backend',
      withCode('57P01', 'terminating connection due to administrator command'),
      'connection_lost',
    ],
    ['57P02 a crash shutdown', withCode('57P02'), 'connection_lost'],
    ['08006 connection failure', withCode('08006'), 'connection_lost'],
    ['08001 cannot establish a connection', withCode('08001'), 'connection_lost'],
    ['57P03 starting up or in recovery', withCode('57P03', 'the database system is starting up'), 'not_ready'],
    ['53300 too many connections', withCode('53300', 'sorry, too many clients already'), 'busy'],
    ['53100 disk full', withCode('53100'), 'busy'],
    ['57014 statement timeout', withCode('57014', 'canceling statement due to statement timeout'), 'busy'],
    ['3D000 the database is missing', withCode('3D000', 'database "x" does not exist'), 'not_ready'],
    ['25006 read-only standby after a failover', withCode('25006'), 'not_ready'],
    ['25P03 idle-in-transaction timeout', withCode('25P03'), 'connection_lost'],
    [
      'ECONNREFUSED from the driver socket',
      withCode('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:5432'),
      'connection_lost',
    ],
    ['ECONNRESET from the driver socket', withCode('ECONNRESET'), 'connection_lost'],
    ['ETIMEDOUT from the driver socket', withCode('ETIMEDOUT'), 'connection_lost'],
    ['EPIPE from the driver socket', withCode('EPIPE'), 'connection_lost'],
    ['"Connection terminated unexpectedly"', new Error('Connection terminated unexpectedly'), 'connection_lost'],
    [
      'a connection that did not open in time',
      new Error('Connection terminated due to connection timeout'),
      'connection_lost',
    ],
    ['an exhausted pool', new Error('timeout exceeded when trying to connect'), 'busy'],
    ['SQLITE_BUSY', withCode('SQLITE_BUSY', 'database is locked'), 'busy'],
    ['SQLITE_LOCKED', withCode('SQLITE_LOCKED'), 'busy'],
    ['SQLITE_IOERR_WRITE', withCode('SQLITE_IOERR_WRITE', 'disk I/O error'), 'not_ready'],
    ['SQLITE_CANTOPEN', withCode('SQLITE_CANTOPEN', 'unable to open database file'), 'not_ready'],
    ['a closed SQLite handle', new TypeError('The database connection is not open'), 'closed'],
  ];
  it.each(temporary.map(([name, error, reason]) => [name, reason, error] as const))(
    '%s is temporary: %s',
    (_name, reason, error) => {
      expect(unavailableReason(error)).toBe(reason);
      const classified = toStoreError(error);
      expect(classified).toBeInstanceOf(StoreUnavailableError);
      expect((classified as StoreUnavailableError).reason).toBe(reason);
      expect((classified as StoreUnavailableError).cause).toBe(error);
    },
  );

  const permanent: [string, unknown][] = [
    ['42601 a syntax error', withCode('42601', 'syntax error at or near "SELEC"')],
    ['42P01 an unknown table', withCode('42P01')],
    ['23505 a unique violation', withCode('23505')],
    ['22P02 a bad value', withCode('22P02')],
    ['28P01 a wrong password (configuration)', withCode('28P01')],
    ['40001 a conflict left after the retries', withCode('40001')],
    ['SQLITE_CONSTRAINT_UNIQUE', withCode('SQLITE_CONSTRAINT_UNIQUE')],
    ['SQLITE_ERROR', withCode('SQLITE_ERROR', 'no such table: x')],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'json')")],
  ];
  it.each(permanent)('%s stays an internal error', (_name, error) => {
    expect(unavailableReason(error)).toBeUndefined();
    expect(toStoreError(error)).toBe(error);
  });

  it('55000 (object not in prerequisite state) passes only while a connection opens', () => {
    const error = withCode('55000', 'database "x" is not currently accepting connections');
    expect(unavailableReason(error, 'connect')).toBe('not_ready');
    expect(unavailableReason(error, 'query')).toBeUndefined();
  });

  it('Retry-After grows with how long the state lasts: 1 s lost, 2 s busy, 5 s not ready or closed', () => {
    expect(toApiError(new StoreUnavailableError('connection_lost')).retryAfter).toBe(1);
    expect(toApiError(new StoreUnavailableError('busy')).retryAfter).toBe(2);
    expect(toApiError(new StoreUnavailableError('not_ready')).retryAfter).toBe(5);
    expect(toApiError(new StoreUnavailableError('closed')).retryAfter).toBe(5);
  });

  it('the HTTP layer never classifies a raw socket error itself: only the store says a fault passes', () => {
    expect(toApiError(withCode('ECONNRESET', 'aborted')).code).toBe('internal_error');
    expect(toApiError(withCode('57P01')).code).toBe('internal_error');
    expect(toApiError(new StoreUnavailableError('connection_lost', '57P01')).code).toBe('service_unavailable');
  });
});

describe('database faults over HTTP', () => {
  let store: SqliteStore;
  beforeAll(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    await put(store, 'team', team(TEAM_A));
    await put(store, 'lead', lead('lead_A01', TEAM_A));
  });
  afterAll(() => store.close());

  /** The store with `listPage` (the list routes' read) failing with `error`. */
  const failingList = (error: unknown): Store => {
    const broken = Object.create(store) as Store;
    broken.listPage = async () => Promise.reject(error);
    return broken;
  };

  it('a store call that fails as unavailable answers 503 service_unavailable with Retry-After, logged as a warning', async () => {
    const cause = withCode('57014', 'canceling statement due to statement timeout');
    const { app, problems } = await loggedApp(failingList(toStoreError(cause)));
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A) });
      expectProblem(res, 503, 'service_unavailable');
      expect(res.headers['retry-after']).toBe('2');
      expect(problems().map((l) => [l.level, l.msg, l.err?.code, l.err?.reason])).toEqual([
        [40, 'database unavailable', '57014', 'busy'],
      ]);
    } finally {
      await app.close();
    }
  });

  it('a database bug answers 500 internal_error without Retry-After, logged as an error', async () => {
    const { app, problems } = await loggedApp(failingList(toStoreError(withCode('42601', 'syntax error'))));
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A) });
      expectProblem(res, 500, 'internal_error');
      expect(res.headers['retry-after']).toBeUndefined();
      expect(problems().map((l) => [l.level, l.msg])).toEqual([[50, 'request failed']]);
    } finally {
      await app.close();
    }
  });

  it('the error log line never carries row values: no detail, where or cause of a driver error', async () => {
    const violation = Object.assign(new Error('duplicate key value violates unique constraint "leads_email"'), {
      code: '23505',
      detail: 'Key (email)=(jane.roe@example.com) already exists.',
      where: 'row (jane.roe@example.com, +4915123456789)',
    });
    const wrapped = new Error('write failed', { cause: violation });
    for (const thrown of [violation, wrapped]) {
      const { app, lines } = await loggedApp(failingList(thrown));
      try {
        const res = await app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A) });
        expectProblem(res, 500, 'internal_error');
        const logged = JSON.stringify(lines);
        expect(logged).not.toContain('jane.roe@example.com');
        expect(logged).not.toContain('4915123456789');
        expect(lines.find((l) => l.msg === 'request failed')?.err?.message).toBe(thrown.message);
      } finally {
        await app.close();
      }
    }
  });

  it('a socket error that did not come through the store is not a 503', async () => {
    const { app } = await loggedApp(failingList(withCode('ECONNRESET', 'socket hang up')));
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A) });
      expectProblem(res, 500, 'internal_error');
    } finally {
      await app.close();
    }
  });

  it('the operator switch (503 api_disabled) still carries no Retry-After', async () => {
    const { app, access } = await loggedApp(store);
    access.switchedOff.set('leads.list', 'api_disabled');
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A) });
      expectProblem(res, 503, 'api_disabled');
      expect(res.headers['retry-after']).toBeUndefined();
    } finally {
      await app.close();
    }
  });

  it('a client that resets its connection mid-body gets no 503 and leaves no log line', async () => {
    const statuses: number[] = [];
    const logged = await loggedApp(store, (a) =>
      // The answer goes nowhere (no onResponse), but it is built: onSend sees its status.
      a.addHook('onSend', async (_request, reply, payload) => {
        statuses.push(reply.statusCode);
        return payload;
      }),
    );
    try {
      await logged.app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = logged.app.server.address() as AddressInfo;
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      socket.write(
        `POST /v1/leads/search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY_A}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":',
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      socket.resetAndDestroy();
      await expect.poll(() => statuses, { timeout: 3000 }).toHaveLength(1);
      expect(statuses).toEqual([400]);
      expect(logged.problems()).toEqual([]);
    } finally {
      await logged.app.close();
    }
  });

  it('a request after the SQLite store closed answers 503 with Retry-After 5', async () => {
    const closing = new SqliteStore({ path: ':memory:' });
    await closing.migrate();
    await put(closing, 'team', team(TEAM_A));
    const { app } = await loggedApp(closing);
    try {
      expect((await app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A) })).statusCode).toBe(200);
      await closing.close();
      const res = await app.inject({ method: 'GET', url: '/v1/leads', headers: auth(KEY_A) });
      expectProblem(res, 503, 'service_unavailable');
      expect(res.headers['retry-after']).toBe('5');
    } finally {
      await app.close();
    }
  });
});
