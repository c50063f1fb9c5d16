import { describe, expect, it } from 'vitest';
import { resolveDbUrl, resolveLimits, resolveOps, serverSettings } from '../../src/cli/options.js';
import { buildProgram } from '../../src/cli/program.js';
import { DEFAULT_LIMITS, LIMITS_SCHEMA } from '../../src/limits.js';
import { settingDefault, settingOption } from '../../src/settings/read-setting.js';
import { LOG_LEVELS } from '../../src/settings/settings.js';

describe('crm-export settings: flag, else environment variable, else default', () => {
  it('--db wins over DATABASE_URL, which wins over sqlite:./data/crm-export.db', () => {
    const env = { DATABASE_URL: 'postgres://db/crm', INIT_CWD: '/srv/app' };
    expect(resolveDbUrl('sqlite:/tmp/x.db', env)).toBe('sqlite:/tmp/x.db');
    expect(resolveDbUrl(undefined, env)).toBe('postgres://db/crm');
    expect(resolveDbUrl(undefined, { INIT_CWD: '/srv/app' })).toBe('sqlite:/srv/app/data/crm-export.db');
  });

  it('a relative SQLite path is resolved where npm or npx was started, so npm start and npx share one file', () => {
    expect(resolveDbUrl('sqlite:db/a.db', { INIT_CWD: '/home/me/crm' })).toBe('sqlite:/home/me/crm/db/a.db');
    expect(resolveDbUrl('sqlite::memory:', { INIT_CWD: '/home/me/crm' })).toBe('sqlite::memory:');
  });

  it('--host and --port win over HOST and PORT; defaults are 127.0.0.1 and 3000', () => {
    expect(serverSettings({}, {})).toMatchObject({ host: '127.0.0.1', port: 3000 });
    expect(serverSettings({}, { HOST: '0.0.0.0', PORT: '8080' })).toMatchObject({ host: '0.0.0.0', port: 8080 });
    expect(serverSettings({ host: '::1', port: 0 }, { HOST: '0.0.0.0', PORT: '8080' })).toMatchObject({
      host: '::1',
      port: 0,
    });
    expect(() => serverSettings({}, { PORT: 'http' })).toThrow('PORT must be an integer 0-65535 (got "http")');
    expect(serverSettings({}, { REDIS_URL: 'redis://cache:6379' })).toMatchObject({ redisUrl: 'redis://cache:6379' });
    expect(serverSettings({}, {})).not.toHaveProperty('redisUrl');
  });

  it('the operator listener is off by default; --ops-port and --ops-host win over their variables; host 127.0.0.1', () => {
    expect(resolveOps({}, {})).toBeUndefined();
    expect(resolveOps({}, { CRM_EXPORT_OPS_PORT: '9464' })).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(resolveOps({ opsPort: 9100 }, { CRM_EXPORT_OPS_PORT: '9464', CRM_EXPORT_OPS_HOST: '10.0.0.2' })).toEqual({
      host: '10.0.0.2',
      port: 9100,
    });
    expect(resolveOps({ opsPort: 0, opsHost: '::1' }, { CRM_EXPORT_OPS_HOST: '10.0.0.2' })).toEqual({
      host: '::1',
      port: 0,
    });
    expect(serverSettings({ opsPort: 9100 }, {}).ops).toEqual({ host: '127.0.0.1', port: 9100 });
    expect(() => resolveOps({}, { CRM_EXPORT_OPS_PORT: 'ninety' })).toThrow('CRM_EXPORT_OPS_PORT');
    expect(() => resolveOps({}, { CRM_EXPORT_OPS_PORT: '70000' })).toThrow('CRM_EXPORT_OPS_PORT');
    expect(() => resolveOps({ opsHost: '0.0.0.0' }, {})).toThrow('--ops-host needs --ops-port');
  });

  it('every limit keeps the spec default unless CRM_EXPORT_LIMITS overrides it', () => {
    expect(resolveLimits({})).toEqual(DEFAULT_LIMITS);
    expect(resolveLimits({ CRM_EXPORT_LIMITS: '{"itemsPerMinute":5000}' })).toEqual({
      ...DEFAULT_LIMITS,
      itemsPerMinute: 5000,
    });
  });

  it('CRM_EXPORT_LIMITS refuses unknown names, values outside their range and limits in the wrong order', () => {
    const limits = (json: string) => () => resolveLimits({ CRM_EXPORT_LIMITS: json });
    expect(limits('{"itemsPerMinuet":5000}')).toThrow(/unknown limit itemsPerMinuet \(known: itemsPerMinute, /);
    expect(limits('{"itemsPerMinute":-1}')).toThrow('itemsPerMinute must be an integer 1-10000000 (got -1)');
    expect(limits('{"itemsPerMinute":"5000"}')).toThrow('itemsPerMinute must be an integer 1-10000000 (got "5000")');
    expect(limits('{"itemsPerMinute":2.5}')).toThrow('itemsPerMinute must be an integer');
    // Revocation must take effect within 5 seconds: a longer key cache is refused.
    expect(limits('{"keyCacheMs":5000}')).toThrow('keyCacheMs must be an integer 1-4999 (got 5000)');
    expect(resolveLimits({ CRM_EXPORT_LIMITS: '{"keyCacheMs":4999}' }).keyCacheMs).toBe(4999);
    expect(limits('{"cursorLifetimeMs":5184000000}')).toThrow(
      'cursorLifetimeMs (5184000000) must not exceed removalRetentionMs (3888000000)',
    );
    expect(limits('{"headersTimeoutMs":60000}')).toThrow('must not exceed requestTimeoutMs');
    expect(limits('{"workerRestartMs":60000}')).toThrow('must not exceed workerRestartMaxMs');
    expect(limits('[1]')).toThrow('CRM_EXPORT_LIMITS must be a JSON object (got [1])');
    expect(limits('{')).toThrow(/CRM_EXPORT_LIMITS must be a JSON object/);
  });

  it('every limit default lies within its own range', () => {
    for (const [name, range] of Object.entries(LIMITS_SCHEMA.properties)) {
      const schema = range as unknown as { minimum: number; maximum: number };
      const value = DEFAULT_LIMITS[name as keyof typeof DEFAULT_LIMITS];
      expect(value, name).toBeGreaterThanOrEqual(schema.minimum);
      expect(value, name).toBeLessThanOrEqual(schema.maximum);
    }
  });
});

describe('each environment variable is checked against its schema, the message naming it and the allowed values', () => {
  const cases: [string, Record<string, string>, string][] = [
    ['PORT', { PORT: 'abc' }, 'PORT must be an integer 0-65535 (got "abc")'],
    ['PORT', { PORT: '3.5' }, 'PORT must be an integer 0-65535 (got "3.5")'],
    ['PORT', { PORT: '65536' }, 'PORT must be an integer 0-65535 (got "65536")'],
    ['HOST', { HOST: 'two words' }, 'HOST must be an IPv4 or IPv6 address or a host name (got "two words")'],
    ['REDIS_URL', { REDIS_URL: 'cache:6379' }, 'REDIS_URL must be redis://... or rediss://... (got "cache:6379")'],
    ['REDIS_URL', { REDIS_URL: 'redis://' }, 'REDIS_URL must be redis://... or rediss://... (got "redis://")'],
    ['LOG_LEVEL', { LOG_LEVEL: 'verbose' }, 'LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent'],
    ['CRM_EXPORT_TRUST_PROXY', { CRM_EXPORT_TRUST_PROXY: '*' }, 'CRM_EXPORT_TRUST_PROXY'],
  ];
  it.each(cases)('%s %j is refused', (_name, env, message) => {
    expect(() => serverSettings({}, env)).toThrow(message);
  });

  it('a database URL must be sqlite:PATH or a PostgreSQL URL that parses', () => {
    expect(() => resolveDbUrl(undefined, { DATABASE_URL: 'mysql://db/crm' })).toThrow(
      'DATABASE_URL must be sqlite:PATH, sqlite::memory:, postgres://... or postgresql://... (got "mysql://db/crm")',
    );
    expect(() => resolveDbUrl(undefined, { DATABASE_URL: 'postgres://db:port/crm' })).toThrow('DATABASE_URL must be');
    expect(() => resolveDbUrl(undefined, { DATABASE_URL: './data/crm.db' })).toThrow('DATABASE_URL must be');
    expect(resolveDbUrl(undefined, { DATABASE_URL: 'postgresql://u:p@db:5432/crm' })).toBe(
      'postgresql://u:p@db:5432/crm',
    );
  });

  it('valid values pass: rediss, IPv6, every pino level, an empty variable counts as unset', () => {
    expect(serverSettings({}, { REDIS_URL: 'rediss://u:p@cache:6380/2' })).toMatchObject({
      redisUrl: 'rediss://u:p@cache:6380/2',
    });
    expect(serverSettings({}, { HOST: '::' })).toMatchObject({ host: '::' });
    for (const level of LOG_LEVELS) expect(serverSettings({}, { LOG_LEVEL: level })).toMatchObject({ logLevel: level });
    expect(serverSettings({}, { PORT: '', LOG_LEVEL: '' })).toMatchObject({ port: 3000, logLevel: 'info' });
  });
});

describe('a flag is parsed by the same schema as its variable', () => {
  it('--port abc is a commander usage error naming the flag and its range', async () => {
    const program = buildProgram().exitOverride();
    for (const command of program.commands) command.exitOverride().configureOutput({ writeErr: () => undefined });
    await expect(program.parseAsync(['serve', '--port', 'abc'], { from: 'user' })).rejects.toThrow(
      '--port must be an integer 0-65535 (got "abc")',
    );
  });

  it('a flag-only setting gets its schema default', () => {
    expect(settingOption('demoBatchSize').defaultValue).toBe(settingDefault('demoBatchSize'));
    expect(settingOption('port').defaultValue).toBeUndefined();
  });
});
