import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { startFeedJobs } from '../../src/feed/feed-jobs.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import type { FeedKind } from '../../src/schemas/enums.js';
import {
  ANY_AGE,
  type FeedEntry,
  type FeedRow,
  type Store,
  TRIM_BATCH_ROWS,
  type TrimBatch,
} from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';

// Retention in bounded batches (docs/feed.md): on a feed of many thousands of trimmable rows, every
// statement handles at most the batch size, other work runs between batches, and the rows left are exactly
// those the one-statement rule leaves. The expected result is computed here from the rows written, by the
// rule itself: expired removals go first (but never a team's newest entry, which the feed lag gauge reads),
// then every live entry with a newer entry of the same record recorded before the superseded cutoff.

const DAY = 86_400_000;
const NOW = Date.parse('2026-03-01T00:00:00.000Z');
const REMOVALS_BEFORE = NOW - 45 * DAY;
const SUPERSEDED_BEFORE = NOW - DAY;
const TEAMS = ['team_a', 'team_b', 'team_c'];
const KINDS: FeedKind[] = ['lead', 'call'];
const BATCH = 250;

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Feed entries in commit order: records with 1 to 8 versions spread over 100 days (times mostly rising, some
 * out of order, as clocks of several processes can be), about one record in three ending in a removal. The
 * same id is used under two kinds and in every team, so both are part of what "the same record" means.
 */
function feedEntries(seed: number, recordsPerTeam: number): FeedEntry[] {
  const next = random(seed);
  const entries: FeedEntry[] = [];
  for (const team of TEAMS) {
    for (let r = 0; r < recordsPerTeam; r++) {
      const kind = KINDS[r % 2] as FeedKind;
      const id = `rec_${Math.floor(r / 2)}`;
      const versions = 1 + Math.floor(next() * 8);
      let at = NOW - 100 * DAY + Math.floor(next() * 80 * DAY);
      for (let version = 1; version <= versions; version++) {
        at += next() < 0.1 ? -Math.floor(next() * 3 * DAY) : Math.floor(next() * 6 * DAY);
        const removed = version === versions && next() < 0.3 ? (next() < 0.5 ? 'erased' : 'deleted') : null;
        entries.push({ team, kind, id, version, recordedAt: Math.min(at, NOW), body: removed ? null : '{}', removed });
      }
    }
  }
  // Interleave teams and records the way concurrent writers would; each record's versions stay in order.
  const queues = new Map<string, FeedEntry[]>();
  for (const e of entries) {
    const key = `${e.team}/${e.kind}/${e.id}`;
    queues.set(key, [...(queues.get(key) ?? []), e]);
  }
  const out: FeedEntry[] = [];
  const open = [...queues.values()];
  while (open.length > 0) {
    const i = Math.floor(next() * open.length);
    out.push((open[i] as FeedEntry[]).shift() as FeedEntry);
    if ((open[i] as FeedEntry[]).length === 0) open.splice(i, 1);
  }
  return out;
}

const rowKey = (row: Pick<FeedRow, 'team' | 'pos'>) => `${row.team}#${row.pos}`;

/** Whether retention drops `row` as an expired removal: one recorded before the cutoff, not its team's head. */
function expiredRemoval(rows: readonly FeedRow[]): (row: FeedRow) => boolean {
  const heads = new Map<string, number>();
  for (const row of rows) heads.set(row.team, Math.max(heads.get(row.team) ?? 0, row.pos));
  return (row) => row.removed !== null && row.recordedAt < REMOVALS_BEFORE && row.pos !== heads.get(row.team);
}

/** What the one-statement rule leaves: removals first, then superseded entries among the rows left. */
function expectedSurvivors(rows: readonly FeedRow[]): Set<string> {
  const expired = expiredRemoval(rows);
  const afterRemovals = rows.filter((row) => !expired(row));
  const newestWitness = new Map<string, number>();
  for (const row of afterRemovals) {
    if (row.recordedAt >= SUPERSEDED_BEFORE) continue;
    const record = `${row.team}/${row.kind}/${row.id}`;
    newestWitness.set(record, Math.max(newestWitness.get(record) ?? 0, row.pos));
  }
  const left = afterRemovals.filter(
    (row) => row.removed !== null || row.pos >= (newestWitness.get(`${row.team}/${row.kind}/${row.id}`) ?? 0),
  );
  return new Set(left.map(rowKey));
}

async function wholeFeed(store: Store): Promise<FeedRow[]> {
  const all: FeedRow[] = [];
  for (const team of TEAMS) {
    for (let after = 0; ; ) {
      const page = await store.readFeed(team, after, 1000);
      all.push(...page);
      if (page.length < 1000) break;
      after = (page[page.length - 1] as FeedRow).pos;
    }
  }
  return all;
}

describeEachBackend('feed retention in bounded batches', (makeStore) => {
  let store: Store;
  beforeEach(async () => {
    store = await makeStore();
  });
  afterEach(async () => {
    await store.close();
  });

  async function fill(entries: readonly FeedEntry[]): Promise<FeedRow[]> {
    for (let i = 0; i < entries.length; i += 2000) {
      await store.write(async (tx) => {
        for (const e of entries.slice(i, i + 2000)) await tx.appendFeed(e);
      });
    }
    return wholeFeed(store);
  }

  it('retention of many thousands of rows works in batches of the configured size and leaves exactly what the unbatched rule leaves', async () => {
    const before = await fill(feedEntries(11, 700));
    const survivors = expectedSurvivors(before);
    const expiredRemovals = before.filter(expiredRemoval(before)).length;
    // Enough work for many batches of both rules.
    expect(before.length).toBeGreaterThan(6000);
    expect(before.length - survivors.size - expiredRemovals).toBeGreaterThan(3 * BATCH);
    expect(expiredRemovals).toBeGreaterThan(BATCH);

    const batches: TrimBatch[] = [];
    const dropped = await store.trimFeed(REMOVALS_BEFORE, SUPERSEDED_BEFORE, {
      batchSize: BATCH,
      onBatch: (b) => batches.push(b),
    });

    const after = await wholeFeed(store);
    expect(new Set(after.map(rowKey))).toEqual(survivors);
    expect(dropped).toBe(before.length - survivors.size);

    for (const b of batches) {
      expect(b.examined).toBeLessThanOrEqual(BATCH);
      expect(b.deleted).toBeLessThanOrEqual(b.examined);
    }
    const removals = batches.filter((b) => b.rule === 'removals');
    const superseded = batches.filter((b) => b.rule === 'superseded');
    // Removals: full batches until a short one.
    expect(removals.map((b) => b.deleted)).toEqual([
      ...Array<number>(Math.floor(expiredRemovals / BATCH)).fill(BATCH),
      expiredRemovals % BATCH,
    ]);
    // Superseded: each row left after the removals is looked at once, in windows of the batch size.
    const windowed = before.length - expiredRemovals;
    expect(superseded.reduce((n, b) => n + b.examined, 0)).toBe(windowed);
    expect(superseded.length).toBe(Math.floor(windowed / BATCH) + 1);
    expect(superseded.reduce((n, b) => n + b.deleted, 0)).toBe(windowed - survivors.size);
    expect(batches.reduce((n, b) => n + b.deleted, 0)).toBe(dropped);

    // A second run finds nothing left: one short batch of each rule.
    const again: TrimBatch[] = [];
    expect(
      await store.trimFeed(REMOVALS_BEFORE, SUPERSEDED_BEFORE, { batchSize: BATCH, onBatch: (b) => again.push(b) }),
    ).toBe(0);
    expect(again.filter((b) => b.rule === 'removals')).toHaveLength(1);
  });

  it('other work runs between retention batches, so serving never waits for the whole feed', async () => {
    await fill(feedEntries(5, 300));
    // Callbacks queued on the event loop (as request I/O is) run between every two batches.
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const turnsAtBatch: number[] = [];
    await store.trimFeed(REMOVALS_BEFORE, SUPERSEDED_BEFORE, {
      batchSize: 200,
      onBatch: () => turnsAtBatch.push(turns),
    });
    ticking = false;
    expect(turnsAtBatch.length).toBeGreaterThan(5);
    for (let i = 1; i < turnsAtBatch.length; i++) {
      expect(turnsAtBatch[i]).toBeGreaterThan(turnsAtBatch[i - 1] as number);
    }
  });

  it('an aborted retention stops after its current batch; a later run finishes the same result', async () => {
    const before = await fill(feedEntries(3, 300));
    const survivors = expectedSurvivors(before);
    const stop = new AbortController();
    const batches: TrimBatch[] = [];
    await store.trimFeed(REMOVALS_BEFORE, SUPERSEDED_BEFORE, {
      batchSize: 100,
      signal: stop.signal,
      onBatch: (b) => {
        batches.push(b);
        if (batches.length === 2) stop.abort();
      },
    });
    expect(batches).toHaveLength(2);
    await store.trimFeed(REMOVALS_BEFORE, SUPERSEDED_BEFORE, { batchSize: 100 });
    expect(new Set((await wholeFeed(store)).map(rowKey))).toEqual(survivors);
  });

  it("retention of one team at any age drops that team's superseded entries in batches, keeps its removals and leaves other teams untouched", async () => {
    const before = await fill(feedEntries(7, 300));
    const team = 'team_b';
    const newest = new Map<string, number>();
    for (const row of before) {
      const record = `${row.team}/${row.kind}/${row.id}`;
      newest.set(record, Math.max(newest.get(record) ?? 0, row.pos));
    }
    const kept = before.filter(
      (row) => row.team !== team || row.removed !== null || row.pos === newest.get(`${row.team}/${row.kind}/${row.id}`),
    );
    expect(before.length - kept.length).toBeGreaterThan(2 * BATCH);
    const batches: TrimBatch[] = [];
    const dropped = await store.trimFeed(null, ANY_AGE, { team, batchSize: BATCH, onBatch: (b) => batches.push(b) });
    expect(dropped).toBe(before.length - kept.length);
    expect(new Set((await wholeFeed(store)).map(rowKey))).toEqual(new Set(kept.map(rowKey)));
    expect(batches.every((b) => b.rule === 'superseded' && b.examined <= BATCH)).toBe(true);
    // Only the team's own entries are looked at.
    expect(batches.reduce((n, b) => n + b.examined, 0)).toBe(before.filter((row) => row.team === team).length);
  });

  it('retention first runs a while after start, not during it: nothing is trimmed at once, all of it after the wait', async () => {
    const before = await fill(feedEntries(3, 40));
    const survivors = expectedSurvivors(before);
    expect(before.length).toBeGreaterThan(survivors.size);
    const errors: unknown[] = [];
    const stop = startFeedJobs({
      store,
      clock: new ManualClock(NOW),
      limits: {
        ...DEFAULT_LIMITS,
        removalRetentionMs: NOW - REMOVALS_BEFORE,
        supersededRetentionMs: NOW - SUPERSEDED_BEFORE,
      },
      firstTrimAfterMs: 300,
      onError: (_job, error) => errors.push(error),
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await wholeFeed(store)).length).toBe(before.length);
      await vi.waitFor(async () => expect((await wholeFeed(store)).length).toBe(survivors.size), { timeout: 5_000 });
    } finally {
      await stop();
    }
    expect(errors).toEqual([]);
  });

  it("stopping the server's feed jobs ends a running retention after its current batch", async () => {
    const before = await fill(feedEntries(11, 700));
    const survivors = expectedSurvivors(before);
    expect(before.length - survivors.size).toBeGreaterThan(2 * TRIM_BATCH_ROWS);
    const errors: unknown[] = [];
    // Retention runs once at start (here without the usual wait); stopping at once leaves it one batch (at
    // most TRIM_BATCH_ROWS rows).
    const stop = startFeedJobs({
      store,
      firstTrimAfterMs: 0,
      clock: new ManualClock(NOW),
      limits: {
        ...DEFAULT_LIMITS,
        removalRetentionMs: NOW - REMOVALS_BEFORE,
        supersededRetentionMs: NOW - SUPERSEDED_BEFORE,
      },
      onError: (_job, error) => errors.push(error),
    });
    await stop();
    expect(errors).toEqual([]);
    const dropped = before.length - (await wholeFeed(store)).length;
    expect(dropped).toBeGreaterThan(0);
    expect(dropped).toBeLessThanOrEqual(TRIM_BATCH_ROWS);
  });
});
