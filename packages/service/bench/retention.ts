import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { openSqliteFile } from '../test/support/sqlite-file.js';
import { SqliteStore, TRIM_BATCH_ROWS } from './service.js';

// Retention on SQLite: how long the serving event loop is blocked at most, the one-statement rule it
// replaced against the batched store.trimFeed (docs/feed.md), on the same copy of one feed. The feed is
// generated once with SQL and cached under packages/service/.bench/: `rows` entries over 90 days in 4
// teams, each record about 5 versions, one entry in 50 a removal, 600-byte bodies.
//
//   node --import tsx bench/retention.ts [rows] [batch rows]      (defaults 1,000,000 and TRIM_BATCH_ROWS)

const DAY = 86_400_000;
const NOW = Date.parse('2026-03-01T00:00:00.000Z');
const REMOVALS_BEFORE = NOW - 45 * DAY;
const SUPERSEDED_BEFORE = NOW - DAY;
const CACHE = fileURLToPath(new URL('../.bench/', import.meta.url));

async function build(rows: number): Promise<string> {
  const path = `${CACHE}retention-${rows}.db`;
  if (existsSync(path)) return path;
  mkdirSync(CACHE, { recursive: true });
  const building = `${path}.building`;
  for (const suffix of ['', '-wal', '-shm']) rmSync(building + suffix, { force: true });
  // The store's schema and indexes first, then the rows in one statement.
  const store = new SqliteStore({ path: building });
  await store.migrate();
  await store.close();
  const db = openSqliteFile(building);
  db.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @rows)
     INSERT INTO feed SELECT 'team_' || ((i % @records) % 4), i, 'lead', 'lead_' || (i % @records), i / @records + 1,
       @now - (@rows - i) * @step, CASE WHEN i % 50 = 0 THEN NULL ELSE @body END,
       CASE WHEN i % 50 = 0 THEN 'erased' ELSE NULL END FROM n`,
  ).run({ rows, records: Math.ceil(rows / 5), now: NOW, step: Math.floor((90 * DAY) / rows), body: 'x'.repeat(600) });
  db.close();
  copyFileSync(building, path);
  for (const suffix of ['', '-wal', '-shm']) rmSync(building + suffix, { force: true });
  return path;
}

function copy(base: string, name: string): string {
  const path = `${CACHE}retention-work-${name}.db`;
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
  copyFileSync(base, path);
  return path;
}

/** The rule before batching: two statements in one transaction, the event loop blocked throughout. */
function oneStatement(path: string): { stallMs: number; deleted: number } {
  const db = openSqliteFile(path);
  const started = performance.now();
  db.exec('BEGIN IMMEDIATE');
  const a = db.prepare('DELETE FROM feed WHERE removed IS NOT NULL AND recorded_at < ?').run(REMOVALS_BEFORE).changes;
  const b = db
    .prepare(
      `DELETE FROM feed WHERE removed IS NULL AND EXISTS (
         SELECT 1 FROM feed newer WHERE newer.kind = feed.kind AND newer.id = feed.id
         AND newer.pos > feed.pos AND newer.team = feed.team AND newer.recorded_at < ?)`,
    )
    .run(SUPERSEDED_BEFORE).changes;
  db.exec('COMMIT');
  const stallMs = performance.now() - started;
  db.close();
  return { stallMs, deleted: a + b };
}

async function batched(path: string) {
  const store = new SqliteStore({ path });
  await store.migrate();
  const delay = monitorEventLoopDelay({ resolution: 1 });
  let batches = 0;
  delay.enable();
  const started = performance.now();
  const deleted = await store.trimFeed(REMOVALS_BEFORE, SUPERSEDED_BEFORE, { batchSize, onBatch: () => batches++ });
  const totalMs = performance.now() - started;
  delay.disable();
  await store.close();
  return { deleted, batches, totalMs, maxStallMs: delay.max / 1e6, p99StallMs: delay.percentile(99) / 1e6 };
}

const rows = Number(process.argv[2] ?? 1_000_000);
const batchSize = Number(process.argv[3] ?? TRIM_BATCH_ROWS);
const base = await build(rows);
const before = oneStatement(copy(base, 'one'));
const after = await batched(copy(base, 'batched'));
for (const name of ['one', 'batched']) {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${CACHE}retention-work-${name}.db${suffix}`, { force: true });
}
if (before.deleted !== after.deleted) throw new Error(`rows deleted differ: ${before.deleted} vs ${after.deleted}`);
const ms = (n: number) => `${Math.round(n).toLocaleString('en-US')} ms`;
process.stdout.write(
  [
    `### Retention on SQLite (${rows.toLocaleString('en-US')} feed rows, ${after.deleted.toLocaleString('en-US')} trimmed)`,
    '',
    '| Variant | Longest event-loop stall | Total time | Statements |',
    '|---|---|---|---|',
    `| One statement per rule (before) | ${ms(before.stallMs)} | ${ms(before.stallMs)} | 2 |`,
    `| Batches of ${batchSize} rows (now) | ${ms(after.maxStallMs)} (p99 ${ms(after.p99StallMs)}) | ${ms(after.totalMs)} | ${after.batches} batches |`,
    '',
  ].join('\n'),
);
