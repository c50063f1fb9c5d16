import { describe, expect, it } from 'vitest';
import { resolveDbUrl, resolveLimits, serverSettings } from '../../src/cli/options.js';
import { DEFAULT_LIMITS } from '../../src/config.js';

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
    expect(() => serverSettings({}, { PORT: 'http' })).toThrow();
    expect(serverSettings({}, { REDIS_URL: 'redis://cache:6379' })).toMatchObject({ redisUrl: 'redis://cache:6379' });
    expect(serverSettings({}, {})).not.toHaveProperty('redisUrl');
  });

  it('every limit keeps the spec default unless CRM_EXPORT_LIMITS overrides it', () => {
    expect(resolveLimits({})).toEqual(DEFAULT_LIMITS);
    expect(resolveLimits({ CRM_EXPORT_LIMITS: '{"itemsPerMinute":5000}' })).toEqual({
      ...DEFAULT_LIMITS,
      itemsPerMinute: 5000,
    });
  });

  it('CRM_EXPORT_LIMITS refuses unknown names and values that are not positive whole numbers', () => {
    expect(() => resolveLimits({ CRM_EXPORT_LIMITS: '{"itemsPerMinuet":5000}' })).toThrow(
      /unknown limit itemsPerMinuet/,
    );
    expect(() => resolveLimits({ CRM_EXPORT_LIMITS: '{"itemsPerMinute":-1}' })).toThrow(/positive whole number/);
    expect(() => resolveLimits({ CRM_EXPORT_LIMITS: '{"itemsPerMinute":"5000"}' })).toThrow(/positive whole number/);
    expect(() => resolveLimits({ CRM_EXPORT_LIMITS: '[1]' })).toThrow(/JSON object/);
    expect(() => resolveLimits({ CRM_EXPORT_LIMITS: '{' })).toThrow(/not valid JSON/);
  });
});
