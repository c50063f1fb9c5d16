import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { ManualClock } from '../../src/clock.js';
import { buildApp } from '../../src/http/app.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import type { Store } from '../../src/store/store.js';
import type { FakeAccess } from '../http/fake-access.js';
import { fakeAccess } from '../http/harness.js';

// The HTTP app over a given store with the fake keys, no page cache (every list reads the database) and a
// logger whose lines the test reads.

export interface LogLine {
  level: number;
  msg: string;
  err?: { type?: string; message?: string; code?: string; reason?: string };
}

export interface LoggedApp {
  app: FastifyInstance;
  access: FakeAccess;
  /** Every line logged so far, parsed. */
  lines: LogLine[];
  /** Lines at warn (40) or above. */
  problems(): LogLine[];
}

/** Builds (and readies) the app; `beforeReady` may add hooks first. The caller closes `app`. */
export async function loggedApp(store: Store, beforeReady?: (app: FastifyInstance) => void): Promise<LoggedApp> {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const access = fakeAccess();
  const app = buildApp({
    store,
    access,
    clock: new ManualClock(Date.parse('2026-01-15T09:00:00.000Z')),
    limits: DEFAULT_LIMITS,
    logger: pino({ level: 'info' }, sink),
    pageCacheBytes: 0,
  });
  beforeReady?.(app);
  await app.ready();
  return { app, access, lines, problems: () => lines.filter((l) => l.level >= 40) };
}
