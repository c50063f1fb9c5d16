import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { FeedRow, Store } from '../../src/store/store.js';
import { CachedTx } from '../../src/write/events/cached-tx.js';
import { makeTestPostgresStore } from '../support/postgres.js';

// Feed order under concurrency (issue 5, docs/feed-order.md): many writers append to the same
// teams and hold their transactions open for random times longer than the reader's poll interval,
// while a consumer per team polls `readFeed` from the last position it saw. If a position could
// become visible before an earlier one, the consumer would move past the earlier one and never
// see it. On PostgreSQL every writer has its own pool and connection: to the database, its own process.
// FEED_STRESS_CHANGES sets the number of changes (100,000 when CI is set).

const PG_URL = process.env.PG_URL;
const CHANGES = Number(process.env.FEED_STRESS_CHANGES ?? (process.env.CI ? 100_000 : 10_000));
/** SQLite runs one transaction at a time, so every commit delay adds up: a smaller run. */
const SQLITE_CHANGES = Math.min(CHANGES, 3_000);
const WRITERS = Number(process.env.FEED_STRESS_WRITERS ?? 16);
/** The consumer's wait after an empty page. */
const POLL_MS = 25;
const PARAMS: FeedStressParams = {
  teams: Array.from({ length: 12 }, (_, i) => `team_${i + 1}`),
  recordsPerTeam: 300,
  maxChangesPerTx: 16,
  // Transactions that wait before committing always wait longer than a poll.
  delayedShare: 0.15,
  delayMs: { min: 2 * POLL_MS, max: 6 * POLL_MS },
};
const TEAMS = PARAMS.teams;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface FeedStressParams {
  teams: string[];
  recordsPerTeam: number;
  maxChangesPerTx: number;
  /** Share of transactions that wait before committing, and how long (ms). */
  delayedShare: number;
  delayMs: { min: number; max: number };
}

const randomInt = (below: number) => Math.floor(Math.random() * below);
const sum = (ns: number[]) => ns.reduce((a, b) => a + b, 0);

/**
 * Writes changes in transactions of 1..maxChangesPerTx changes to one team's records, as the write
 * side does (read the record, write version + 1, append it to the feed), some held open before
 * commit; `claim` hands out how many changes the next transaction makes (0: stop). Returns the
 * number of changes committed.
 */
async function feedStressWriter(
  store: Store,
  p: FeedStressParams,
  claim: () => number,
  batched = false,
): Promise<number> {
  let committed = 0;
  for (let n = claim(); n > 0; n = claim()) {
    await store.write(async (plain) => {
      // Batched: through the write side's cache, as `Crm` writes (reads taken ahead, writes and feed
      // positions applied at the end from a head locked once per transaction).
      const cache = batched ? new CachedTx(plain, { deferWrites: true }) : undefined;
      const tx = cache ?? plain;
      const team = p.teams[randomInt(p.teams.length)] as string;
      const ids = new Set<string>();
      while (ids.size < n) ids.add(`lead_${team}_${randomInt(p.recordsPerTeam)}`);
      await cache?.prefetch({ entities: [], records: [...ids].map((id) => ({ kind: 'lead' as const, id })) });
      for (const id of ids) {
        const version = ((await tx.getRecord('lead', id))?.version ?? 0) + 1;
        const json = JSON.stringify({ id, version });
        await tx.putRecord({
          ...{ kind: 'lead', id, team, lead: null, board: null, stage: null, status: 'new', email: null, phone: null },
          ...{ version, updatedAt: new Date().toISOString(), json },
        });
        await tx.appendFeed({ team, kind: 'lead', id, version, recordedAt: Date.now(), body: json, removed: null });
      }
      await cache?.flush();
      if (Math.random() < p.delayedShare) await sleep(p.delayMs.min + Math.random() * (p.delayMs.max - p.delayMs.min));
    });
    committed += n;
  }
  return committed;
}

/** A claim function handing out `total` changes in random transaction sizes. */
function changeBudget(total: number, maxChangesPerTx: number): () => number {
  let left = total;
  return () => {
    const n = Math.min(left, 1 + randomInt(maxChangesPerTx));
    left -= n;
    return n;
  };
}

interface Outcome {
  committed: number;
  /** Committed entries the consumer never saw: it had moved past their position before they appeared. */
  skipped: number;
  /** Entries whose version was not above the version the consumer already held for the record. */
  regressions: number;
  /** Entries the consumer saw twice. */
  duplicates: number;
  seen: Map<string, FeedRow[]>;
  final: Map<string, FeedRow[]>;
  /** Records whose stored version differs from the number of feed entries it got (a lost update). */
  lostUpdates: number;
  /** Entries whose body is not the record at the entry's version. */
  wrongBodies: number;
}

async function runStress(reader: Store, writers: () => Promise<number>): Promise<Outcome> {
  let writing = true;
  const out: Outcome = {
    committed: 0,
    skipped: 0,
    regressions: 0,
    duplicates: 0,
    seen: new Map(),
    final: new Map(),
    lostUpdates: 0,
    wrongBodies: 0,
  };
  const held = new Map<string, number>();

  const consume = async (team: string) => {
    const seen: FeedRow[] = [];
    out.seen.set(team, seen);
    let after = 0;
    for (;;) {
      const stillWriting = writing; // read before the page: an empty page after the end is final
      const page = await reader.readFeed(team, after, 100);
      for (const row of page) {
        if (row.pos <= after) out.duplicates++;
        const key = `${row.kind}:${row.id}`;
        if (row.version <= (held.get(key) ?? 0)) out.regressions++;
        held.set(key, Math.max(row.version, held.get(key) ?? 0));
        seen.push(row);
        after = Math.max(after, row.pos);
      }
      if (page.length === 0) {
        if (!stillWriting) return;
        await sleep(POLL_MS);
      }
    }
  };

  const consumers = TEAMS.map((team) => consume(team));
  try {
    out.committed = await writers();
  } finally {
    writing = false;
    await Promise.all(consumers);
  }

  for (const team of TEAMS) {
    const all: FeedRow[] = [];
    for (let page = await reader.readFeed(team, 0, 5000); page.length > 0; ) {
      all.push(...page);
      page = await reader.readFeed(team, page[page.length - 1]?.pos ?? 0, 5000);
    }
    out.final.set(team, all);
    const seenPositions = new Set((out.seen.get(team) ?? []).map((r) => r.pos));
    out.skipped += all.filter((r) => !seenPositions.has(r.pos)).length;
    const counts = new Map<string, number>();
    for (const row of all) counts.set(row.id, (counts.get(row.id) ?? 0) + 1);
    // Every entry delivers its own version (bodies borrowed from the record row, or copied when superseded).
    for (const row of all) if (JSON.parse(row.body ?? '{}').version !== row.version) out.wrongBodies++;
    const stored = await reader.getRecords('lead', [...counts.keys()]);
    for (const rec of stored) if (rec.version !== counts.get(rec.id)) out.lostUpdates++;
  }
  return out;
}

function expectEveryCommittedEntrySeenOnceInOrder(out: Outcome, changes: number): void {
  expect(out.skipped).toBe(0);
  expect(out.duplicates).toBe(0);
  expect(out.regressions).toBe(0);
  expect(out.lostUpdates).toBe(0);
  expect(out.wrongBodies).toBe(0);
  let total = 0;
  for (const team of TEAMS) {
    const final = out.final.get(team) ?? [];
    total += final.length;
    // Positions are 1..n without gaps (nothing was purged or trimmed) ...
    expect(final.map((r) => r.pos)).toEqual(final.map((_, i) => i + 1));
    // ... and the consumer saw exactly those entries, in that order.
    const seen = out.seen.get(team) ?? [];
    expect(seen.map((r) => `${r.pos}:${r.id}@${r.version}`)).toEqual(final.map((r) => `${r.pos}:${r.id}@${r.version}`));
  }
  expect(total).toBe(changes);
  expect(out.committed).toBe(changes);
}

const describePg = PG_URL ? describe : describe.skip;
const pgTitle = PG_URL
  ? 'feed order under concurrency [postgres]'
  : 'feed order under concurrency [postgres] (skipped: PostgreSQL is not enabled: set PG_URL)';

describePg(pgTitle, () => {
  let reader: PostgresStore;
  let writers: PostgresStore[] = [];
  beforeAll(async () => {
    reader = await makeTestPostgresStore(PG_URL as string, { poolSize: TEAMS.length });
    writers = Array.from(
      { length: WRITERS },
      () => new PostgresStore({ url: PG_URL as string, schema: reader.schema, poolSize: 1 }),
    );
  });
  afterAll(async () => {
    await Promise.all(writers.map((w) => w.close()));
    await reader?.close();
  });

  it(`${WRITERS} concurrent writers with commit delays longer than a poll: the feed never skips a change and versions never go back (${CHANGES} changes)`, async () => {
    expect(WRITERS).toBeGreaterThanOrEqual(16);
    const claim = changeBudget(CHANGES, PARAMS.maxChangesPerTx);
    const run = async () => sum(await Promise.all(writers.map((w) => feedStressWriter(w, PARAMS, claim))));
    const out = await runStress(reader, run);
    expectEveryCommittedEntrySeenOnceInOrder(out, CHANGES);
  }, 600_000); // 100,000 changes took 157-228 s here with other suites loading the machine

  it(`${WRITERS} concurrent writers through the write side's batching cache: the feed never skips a change and versions never go back (${CHANGES} changes)`, async () => {
    // A schema of its own (the first test's entries stay in the shared one).
    const own = await makeTestPostgresStore(PG_URL as string, { poolSize: TEAMS.length });
    const ownWriters = Array.from(
      { length: WRITERS },
      () => new PostgresStore({ url: PG_URL as string, schema: own.schema, poolSize: 1 }),
    );
    try {
      const claim = changeBudget(CHANGES, PARAMS.maxChangesPerTx);
      const run = async () => sum(await Promise.all(ownWriters.map((w) => feedStressWriter(w, PARAMS, claim, true))));
      const out = await runStress(own, run);
      expectEveryCommittedEntrySeenOnceInOrder(out, CHANGES);
    } finally {
      await Promise.all(ownWriters.map((w) => w.close()));
      await own.close();
    }
  }, 600_000);
});

describe('feed order under concurrency [sqlite]', () => {
  it(`${WRITERS} concurrent writers through one store (SQLite has one writer): the feed never skips a change (${SQLITE_CHANGES} changes)`, async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    try {
      const claim = changeBudget(SQLITE_CHANGES, PARAMS.maxChangesPerTx);
      const run = async () =>
        sum(await Promise.all(Array.from({ length: WRITERS }, () => feedStressWriter(store, PARAMS, claim))));
      const out = await runStress(store, run);
      expectEveryCommittedEntrySeenOnceInOrder(out, SQLITE_CHANGES);
    } finally {
      await store.close();
    }
  }, 300_000);

  it(`${WRITERS} concurrent writers through the write side's batching cache: the feed never skips a change (${SQLITE_CHANGES} changes)`, async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    try {
      const claim = changeBudget(SQLITE_CHANGES, PARAMS.maxChangesPerTx);
      const run = async () =>
        sum(await Promise.all(Array.from({ length: WRITERS }, () => feedStressWriter(store, PARAMS, claim, true))));
      const out = await runStress(store, run);
      expectEveryCommittedEntrySeenOnceInOrder(out, SQLITE_CHANGES);
    } finally {
      await store.close();
    }
  }, 300_000);
});
