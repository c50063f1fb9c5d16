import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { listenerOrigin } from '../operator-listener.js';
import { buildInternalApp, type InternalAppOptions } from './internal-app.js';

// Starting and stopping the internal listener (internal-app.ts). Under `serve --workers` every worker listens
// on the same port: the cluster module shares it, as it shares the API's.

/** Where the internal listener listens. */
export interface InternalAddress {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** When `port` is in use, listen on any free port instead of failing (the default listener of `start`). */
  orFreePort?: boolean;
}

export interface InternalListener {
  origin: string;
  port: number;
  app: FastifyInstance;
  /** Stops accepting; requests in flight get `graceMs`, then their connections are destroyed. */
  close(graceMs: number): Promise<void>;
}

export async function startInternalListener(
  at: InternalAddress,
  options: InternalAppOptions,
): Promise<InternalListener> {
  const app = buildInternalApp(options);
  try {
    try {
      await app.listen({ host: at.host, port: at.port });
    } catch (error) {
      if (!(at.orFreePort && (error as NodeJS.ErrnoException).code === 'EADDRINUSE')) throw error;
      await app.listen({ host: at.host, port: 0 });
    }
  } catch (error) {
    await app.close();
    const { code, message } = error as NodeJS.ErrnoException;
    const where = `internal listener: cannot listen on ${at.host}:${at.port}`;
    const failure = new Error(
      code === 'EADDRINUSE' ? `${where}: port ${at.port} is already in use` : `${where}: ${message}`,
    ) as NodeJS.ErrnoException;
    // A worker of `serve --workers` reports a listen error by its code and call (cli/serve-workers.ts).
    Object.assign(failure, { code, syscall: (error as NodeJS.ErrnoException).syscall });
    throw failure;
  }
  const { port } = app.server.address() as AddressInfo;
  return {
    origin: listenerOrigin(at.host, port),
    port,
    app,
    async close(graceMs) {
      const cut = setTimeout(() => app.server.closeAllConnections(), graceMs);
      try {
        await app.close();
      } finally {
        clearTimeout(cut);
      }
      await options.tokens.settle();
    },
  };
}
