import { Redis } from 'ioredis';
import { StoreAccessControl } from '../../src/access/store-access-control.js';
import { systemClock } from '../../src/clock.js';
import { buildApp } from '../../src/http/app.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/limits.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

// One API process for the two-process test: shared SQLite file and shared Redis, real clock.
// argv: dbPath redisUrl prefix limitsJson. Prints `port=N` once listening.

const [dbPath, redisUrl, prefix, limitsJson] = process.argv.slice(2);
const limits: Limits = { ...DEFAULT_LIMITS, ...(JSON.parse(limitsJson ?? '{}') as Partial<Limits>) };
const store = new SqliteStore({ path: dbPath as string });
await store.migrate();
const redis = new Redis(redisUrl as string, { enableOfflineQueue: false });
await new Promise((resolve) => redis.once('ready', resolve));
const access = new StoreAccessControl({ store, clock: systemClock, limits, redis, redisPrefix: prefix as string });
const app = buildApp({ store, access, clock: systemClock, limits });
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
process.stdout.write(`port=${typeof address === 'object' && address ? address.port : 0}\n`);
process.on('SIGTERM', async () => {
  await app.close();
  redis.disconnect();
  await store.close();
  process.exit(0);
});
