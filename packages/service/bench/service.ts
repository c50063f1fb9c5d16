// The service as the benchmarks run it: the compiled JavaScript in dist/, which is what `npm start` and
// `crm-export` run (`npm run bench` builds it first). The bench scripts themselves run under tsx, and so
// would `../src/` imports: tsx keeps function names by wrapping every function it creates in a helper call,
// about a tenth of an API request's CPU (measured), a cost production never pays. Types still come from src/.

const dist = (path: string): Promise<unknown> => import(new URL(`../dist/${path}`, import.meta.url).href);

export const { StoreAccessControl } = (await dist(
  'access/store-access-control.js',
)) as typeof import('../src/access/store-access-control.js');
export const { createIntegration } = (await dist(
  'access/integrations.js',
)) as typeof import('../src/access/integrations.js');
export const { limitScripts } = (await dist(
  'access/limits/redis-scripts.js',
)) as typeof import('../src/access/limits/redis-scripts.js');
export const { redisClientOptions } = (await dist(
  'access/limits/redis-health.js',
)) as typeof import('../src/access/limits/redis-health.js');
export const { systemClock } = (await dist('clock.js')) as typeof import('../src/clock.js');
export const { DEFAULT_LIMITS } = (await dist('limits.js')) as typeof import('../src/limits.js');
export const { CursorCodec, loadCursorSecret } = (await dist(
  'cursor-codec.js',
)) as typeof import('../src/cursor-codec.js');
export const { compactUnreadFeeds } = (await dist(
  'demo/demo-feed-compaction.js',
)) as typeof import('../src/demo/demo-feed-compaction.js');
export const { demoEvents } = (await dist('demo/demo-generator.js')) as typeof import('../src/demo/demo-generator.js');
export const { runDemo } = (await dist('demo/run-demo.js')) as typeof import('../src/demo/run-demo.js');
export const { buildApp } = (await dist('http/app.js')) as typeof import('../src/http/app.js');
export const { DEFAULT_PAGE_CACHE_BYTES } = (await dist(
  'http/page-cache.js',
)) as typeof import('../src/http/page-cache.js');
export const { encodeListCursor } = (await dist('http/cursor.js')) as typeof import('../src/http/cursor.js');
export const { ingestFile } = (await dist('ingest/ingest-file.js')) as typeof import('../src/ingest/ingest-file.js');
export const { Metrics } = (await dist('metrics/metrics.js')) as typeof import('../src/metrics/metrics.js');
export const { SCOPES } = (await dist('schemas/enums.js')) as typeof import('../src/schemas/enums.js');
export const { createLogger, startServer } = (await dist('server.js')) as typeof import('../src/server.js');
export const { PostgresStore } = (await dist(
  'store/postgres/postgres-store.js',
)) as typeof import('../src/store/postgres/postgres-store.js');
export const { SqliteStore } = (await dist(
  'store/sqlite/sqlite-store.js',
)) as typeof import('../src/store/sqlite/sqlite-store.js');
export const { TRIM_BATCH_ROWS } = (await dist('store/store.js')) as typeof import('../src/store/store.js');
export const { Crm } = (await dist('write/events/crm.js')) as typeof import('../src/write/events/crm.js');
export const { EVENT_TYPES } = (await dist('write/events/events.js')) as typeof import('../src/write/events/events.js');
