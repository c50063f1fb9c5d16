import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ENDPOINT_NAMES } from '../../src/access/endpoints.js';
import { prepareStore } from '../../src/store/open-store.js';
import { DatabaseMissingError } from '../../src/store/store.js';
import { uniqueSchema } from '../support/postgres.js';
import { runCli, startCli, tempDir } from './cli.js';

// A bad setting stops the command before it opens anything: the message names the flag or variable and the
// allowed values, on standard error, exit code 1. Only start, serve, demo, ingest and migrate create a database.

const tmp = tempDir();
afterAll(() => tmp.remove());

interface Case {
  what: string;
  args: string[];
  env?: Record<string, string>;
  /** Every piece must appear on standard error. */
  says: string[];
}

const db = () => tmp.db('never-created');

const CASES: Case[] = [
  {
    what: 'PORT not a number',
    args: ['serve'],
    env: { PORT: 'abc' },
    says: ['PORT must be an integer 0-65535', '"abc"'],
  },
  { what: 'PORT out of range', args: ['serve'], env: { PORT: '70000' }, says: ['PORT must be an integer 0-65535'] },
  { what: '--port not a number', args: ['serve', '--port', 'abc'], says: ['--port must be an integer 0-65535'] },
  {
    what: 'REDIS_URL without a scheme',
    args: ['serve'],
    env: { REDIS_URL: 'cache.internal:6379' },
    says: ['REDIS_URL must be redis://... or rediss://...', '"cache.internal:6379"'],
  },
  {
    what: 'REDIS_URL of another scheme',
    args: ['start'],
    env: { REDIS_URL: 'http://cache:6379' },
    says: ['REDIS_URL must be redis://'],
  },
  {
    what: '--redis malformed (admin integrations usage)',
    args: ['admin', 'integrations', 'usage', 'int_x', '--redis', 'redis//cache'],
    says: ['--redis must be redis://'],
  },
  {
    what: 'DATABASE_URL of an unknown kind',
    args: ['admin', 'teams', 'list'],
    env: { DATABASE_URL: 'mysql://db/crm' },
    says: ['DATABASE_URL must be sqlite:PATH', 'postgres://', '"mysql://db/crm"'],
  },
  {
    what: '--db with a misspelt scheme',
    args: ['demo', '--db', 'postgress://db/crm'],
    says: ['--db must be sqlite:PATH', 'postgresql://'],
  },
  {
    what: 'admin --db with a misspelt scheme',
    args: ['admin', 'teams', 'list', '--db', 'postgress://db/crm'],
    says: ['--db must be sqlite:PATH', '"postgress://db/crm"'],
  },
  {
    what: 'LOG_LEVEL unknown',
    args: ['serve'],
    env: { LOG_LEVEL: 'verbose' },
    says: ['LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent', '"verbose"'],
  },
  {
    what: 'keyCacheMs too long for revocation',
    args: ['serve'],
    env: { CRM_EXPORT_LIMITS: '{"keyCacheMs":600000}' },
    says: ['CRM_EXPORT_LIMITS: keyCacheMs must be an integer 1-4999', '600000'],
  },
  {
    what: 'limits in the wrong order',
    args: ['serve'],
    env: { CRM_EXPORT_LIMITS: '{"cursorLifetimeMs":5184000000}' },
    says: ['cursorLifetimeMs', 'must not exceed removalRetentionMs'],
  },
  {
    what: 'HOST not an address',
    args: ['serve'],
    env: { HOST: 'not a host' },
    says: ['HOST must be an IPv4 or IPv6 address or a host name'],
  },
  { what: '--workers out of range', args: ['serve', '--workers', '65'], says: ['--workers must be an integer 1-64'] },
  {
    what: 'demo --now not a date',
    args: ['demo', '--now', 'yesterday'],
    says: ['--now must be an ISO 8601 date-time'],
  },
  { what: 'demo --teams zero', args: ['demo', '--teams', '0'], says: ['--teams must be an integer 1-100'] },
  { what: 'ingest --batch-size fraction', args: ['ingest', '-', '--batch-size', '2.5'], says: ['--batch-size'] },
];

describe('crm-export refuses a bad setting, naming it and the allowed values', () => {
  // Concurrent: each case is its own process and database path.
  it.concurrent.each(CASES)('$what: exits non-zero, says so on standard error, creates no database', async (c) => {
    const args = c.args[0] === 'admin' || c.args.includes('--db') ? c.args : [...c.args, '--db', db()];
    // A fixed port that nothing should ever bind: the command must stop before listening.
    const result = await runCli(args, { env: { PORT: '1', ...c.env } });
    expect(result.code).not.toBe(0);
    for (const piece of c.says) expect(result.stderr).toContain(piece);
    expect(result.stdout).not.toContain('crm-export is serving');
    expect(existsSync(db().slice('sqlite:'.length))).toBe(false);
  });
});

describe('admin switches capability takes only the endpoints the API has', () => {
  it('an unknown name is refused with the list of known names, before any database is opened', async () => {
    const result = await runCli(['admin', 'switches', 'capability', 'leads.lst', 'off', '--db', db()]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('unknown endpoint "leads.lst"');
    expect(result.stderr).toContain(ENDPOINT_NAMES.join(', '));
    expect(existsSync(db().slice('sqlite:'.length))).toBe(false);
  });
});

describe('only start, serve, demo, ingest and migrate create a database', () => {
  it('admin commands refuse a SQLite file that does not exist, naming the path, and create nothing', async () => {
    const missing = join(tmp.dir, 'typo', 'crm.db');
    const commands = [
      ['admin', 'teams', 'list'],
      ['admin', 'switches', 'list'],
      ['admin', 'feed', 'capture'],
    ];
    const results = await Promise.all(commands.map((args) => runCli([...args, '--db', `sqlite:${missing}`])));
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stdout).not.toContain('(none)');
      expect(result.stderr).toContain(`no database at ${missing}`);
      expect(result.stderr).toContain('crm-export migrate');
    }
    expect(existsSync(join(tmp.dir, 'typo'))).toBe(false);
  });

  it('a relative --db is taken from where npx ran: run from another folder, admin refuses instead of answering (none)', async () => {
    const result = await runCli(['admin', 'teams', 'list', '--db', 'sqlite:data/crm-export.db'], {
      env: { INIT_CWD: tmp.dir },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`no database at ${join(tmp.dir, 'data/crm-export.db')}`);
  });

  it('migrate creates and migrates the database; admin commands then work on it', async () => {
    const made = tmp.db('migrated');
    const migrated = await runCli(['migrate', '--db', made, '--json']);
    expect(migrated.code).toBe(0);
    expect(JSON.parse(migrated.stdout)).toMatchObject({ backend: 'sqlite', pending: [] });
    const listed = await runCli(['admin', 'teams', 'list', '--db', made, '--json']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([]);
  });

  it('demo creates a missing database', async () => {
    const made = tmp.db('demo');
    const result = await runCli(['demo', '--db', made, '--teams', '1', '--leads', '0', '--seed', '3', '--json']);
    expect(result.code).toBe(0);
    expect(existsSync(made.slice('sqlite:'.length))).toBe(true);
  });

  it('serve creates a missing database', async () => {
    const made = tmp.db('serve');
    const server = await startCli(['serve', '--db', made, '--port', '0']);
    expect(existsSync(made.slice('sqlite:'.length))).toBe(true);
    expect(await server.stop()).toBe(0);
  });

  it.runIf(process.env.PG_URL)(
    `on PostgreSQL a schema without migrations is refused, and nothing is created in it${process.env.PG_URL ? '' : ' (skipped: PostgreSQL is not enabled: set PG_URL)'}`,
    async () => {
      const { PostgresStore } = await import('../../src/store/postgres/postgres-store.js');
      const schema = uniqueSchema();
      const store = new PostgresStore({ url: process.env.PG_URL as string, schema });
      const refused = prepareStore(store, { where: `PostgreSQL schema ${schema}`, create: false });
      await expect(refused).rejects.toBeInstanceOf(DatabaseMissingError);
      await expect(refused).rejects.toThrow(`PostgreSQL schema ${schema} is not a crm-export database`);
      const client = new pg.Client({ connectionString: process.env.PG_URL as string });
      await client.connect();
      try {
        const found = await client.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [schema]);
        expect(found.rowCount).toBe(0);
      } finally {
        await client.end();
      }
    },
  );
});
