import { describe, expect, it } from 'vitest';
import { resolveInternal, serverSettings } from '../../src/cli/options.js';
import { startCli, tempDir } from '../cli/cli.js';

// Where the internal listener listens (docs/internal-listener.md): `serve` opens it only when a port is set,
// `start` on the API port plus two (any free port when that one is taken), loopback unless told otherwise.

describe('internal listener settings', () => {
  it('serve: none without a port; a port from --internal-port or INTERNAL_PORT, on loopback by default', () => {
    expect(resolveInternal({}, {})).toBeUndefined();
    expect(resolveInternal({ internalPort: 4100 }, {})).toEqual({ host: '127.0.0.1', port: 4100 });
    expect(resolveInternal({}, { INTERNAL_PORT: '4200', INTERNAL_HOST: '10.0.0.5' })).toEqual({
      host: '10.0.0.5',
      port: 4200,
    });
    // The flag wins over the variable.
    expect(resolveInternal({ internalPort: 4300 }, { INTERNAL_PORT: '4200' })?.port).toBe(4300);
  });

  it('start: the API port plus two, any free port when taken; an API on any free port gives any free port', () => {
    expect(resolveInternal({}, {}, 3000)).toEqual({ host: '127.0.0.1', port: 3002, orFreePort: true });
    expect(resolveInternal({}, {}, 0)).toEqual({ host: '127.0.0.1', port: 0, orFreePort: true });
    expect(resolveInternal({}, {}, 65534)?.port).toBe(0);
    expect(serverSettings({ port: 3000 }, {}, { opsByDefault: true }).internal?.port).toBe(3002);
    expect(serverSettings({ port: 3000 }, {}).internal).toBeUndefined();
  });

  it('--internal-host without a port is refused, and a bad port names its variable', () => {
    expect(() => resolveInternal({ internalHost: '0.0.0.0' }, {})).toThrow('--internal-host needs --internal-port');
    expect(() => resolveInternal({}, { INTERNAL_PORT: 'abc' })).toThrow('INTERNAL_PORT');
  });

  it('serve --internal-port prints the address, answers there with problem+json, and stops with the API', {
    timeout: 60_000,
  }, async () => {
    const tmp = tempDir();
    const server = await startCli(['serve', '--db', tmp.db('internal'), '--port', '0', '--internal-port', '0']);
    try {
      const internal = /internal listener: (http:\/\/127\.0\.0\.1:\d+) /.exec(server.stdout())?.[1];
      expect(internal, server.stdout()).toBeDefined();
      const refused = await fetch(`${internal}/intake/v1/sources/crm`);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      expect(((await refused.json()) as { code: string }).code).toBe('invalid_token');
      // The API's port does not serve the internal paths.
      const onApi = await fetch(`${server.base.replace(/\/v1$/, '')}/intake/v1/sources/crm`);
      expect(onApi.status).toBe(404);
    } finally {
      expect(await server.stop()).toBe(0);
      tmp.remove();
    }
  });
});
