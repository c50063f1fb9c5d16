import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { trimUsageOnce } from '../../src/feed/feed-jobs.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import type { RequestLogRow, Store, UsageBatch } from '../../src/store/store.js';
import { type Answered, UsageRecorder } from '../../src/usage/recorder.js';
import { lastUses, requestLogPage } from '../../src/usage/usage-reads.js';
import { describeEachBackend } from '../support/backends.js';

// Retention of the request log (by age and by rows per integration), a full queue that drops and counts
// without waiting, and last use and counts written by several processes (serve --workers) into one database.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.parse('2026-03-10T12:30:00.000Z');

const row = (integration: string, at: number, n: number): RequestLogRow => ({
  at,
  integration,
  requestId: `req_${integration}_${n}`,
  method: 'GET',
  route: '/v1/leads',
  status: 200,
  code: null,
  items: 1,
  address: '192.0.2.1',
});

const answered = (at: number, integration: string | null, overrides: Partial<Answered> = {}): Answered => ({
  at,
  integration,
  keyId: integration === null ? null : `key_${integration}`,
  presentedKey: null,
  requestId: `req_${at}`,
  method: 'GET',
  route: '/v1/leads',
  status: 200,
  code: null,
  reason: '',
  items: 2,
  address: '192.0.2.1',
  ...overrides,
});

describeEachBackend('request log retention', (makeStore) => {
  let store: Store;
  afterEach(async () => store?.close());

  it('the retention job drops request log rows and usage counts older than requestLogRetentionMs', async () => {
    store = await makeStore();
    const old = NOW - DEFAULT_LIMITS.requestLogRetentionMs - HOUR;
    const batch: UsageBatch = {
      log: [row('int_a', old, 1), row('int_a', old + 1, 2), row('int_a', NOW - DAY, 3), row('int_b', NOW, 4)],
      counts: [
        {
          integration: 'int_a',
          hour: old - (old % HOUR),
          route: '/v1/leads',
          reason: '',
          requests: 2,
          items: 2,
          lastAt: old,
        },
        {
          integration: 'int_a',
          hour: NOW - (NOW % HOUR),
          route: '/v1/leads',
          reason: '',
          requests: 1,
          items: 1,
          lastAt: NOW,
        },
      ],
      lastUses: [],
    };
    await store.appendUsage(batch);
    const dropped = await trimUsageOnce(store, new ManualClock(NOW), DEFAULT_LIMITS);
    expect(dropped).toBe(3);
    const left = await requestLogPage(store, { integration: null });
    expect(left.entries.map((e) => e.requestId)).toEqual(['req_int_b_4', 'req_int_a_3']);
    expect((await store.usageCounts({ integration: 'int_a', sinceHour: 0 })).map((c) => c.lastAt)).toEqual([NOW]);
  });

  it('keeps at most requestLogRowsPerIntegration rows of each integration, dropping the oldest', async () => {
    store = await makeStore();
    const log = [
      ...Array.from({ length: 150 }, (_, i) => row('int_busy', NOW - 1000 + i, i)),
      ...Array.from({ length: 20 }, (_, i) => row('int_quiet', NOW - 2000 + i, i)),
    ];
    await store.appendUsage({ log, counts: [], lastUses: [] });
    const limits = { ...DEFAULT_LIMITS, requestLogRowsPerIntegration: 100 };
    expect(await trimUsageOnce(store, new ManualClock(NOW), limits)).toBe(50);
    const busy = await requestLogPage(store, { integration: 'int_busy', limit: 500 });
    expect(busy.entries).toHaveLength(100);
    expect(busy.entries.at(-1)?.requestId).toBe('req_int_busy_50');
    expect((await requestLogPage(store, { integration: 'int_quiet', limit: 500 })).entries).toHaveLength(20);
  });
});

describeEachBackend('last use and counts across processes', (makeStore) => {
  let store: Store;
  afterEach(async () => store?.close());

  it('last use survives across workers: the newest use wins whichever process flushes last, and counts add up', async () => {
    store = await makeStore();
    const clock = new ManualClock(NOW);
    const limits = { requestLogQueue: 1000, requestLogFlushMs: 60_000 };
    const first = new UsageRecorder({ store, clock, limits });
    const second = new UsageRecorder({ store, clock, limits });
    first.record(answered(NOW - 5000, 'int_a', { address: '192.0.2.10' }));
    second.record(answered(NOW - 1000, 'int_a', { address: '192.0.2.20' }));
    second.recordUse('token', 'ops-console', '127.0.0.1');
    // The newer use is written first; the older one arriving later changes nothing.
    await second.flush();
    await first.flush();
    expect(await lastUses(store, 'integration', ['int_a'])).toEqual({
      int_a: { at: new Date(NOW - 1000).toISOString(), address: '192.0.2.20' },
    });
    expect(await lastUses(store, 'key', ['key_int_a'])).toEqual({
      key_int_a: { at: new Date(NOW - 1000).toISOString(), address: '192.0.2.20' },
    });
    expect(Object.keys(await lastUses(store, 'token', ['ops-console']))).toEqual(['ops-console']);
    const [count] = await store.usageCounts({ integration: 'int_a', sinceHour: 0 });
    expect(count).toMatchObject({ requests: 2, items: 4, lastAt: NOW - 1000 });
    // A later use from the first process wins again.
    first.record(answered(NOW, 'int_a', { address: '192.0.2.30' }));
    await first.stop();
    await second.stop();
    expect((await lastUses(store, 'integration', ['int_a'])).int_a?.address).toBe('192.0.2.30');
  });
});

describe('a full request log queue', () => {
  it('drops and counts what does not fit, never waits, and still counts usage and last use', async () => {
    let release: () => void = () => undefined;
    const written: UsageBatch[] = [];
    // A store whose writes hang until released: a flush is stuck while requests keep coming.
    const store = {
      appendUsage: (batch: UsageBatch) =>
        new Promise<void>((resolve) => {
          written.push(batch);
          release = resolve;
        }),
      getEntity: async () => undefined,
    } as unknown as Store;
    const recorder = new UsageRecorder({
      store,
      clock: new ManualClock(NOW),
      limits: { requestLogQueue: 3, requestLogFlushMs: 60_000 },
    });
    for (let i = 0; i < 5; i++) expect(recorder.record(answered(NOW + i, 'int_a'))).toBeUndefined();
    expect(recorder.stats()).toMatchObject({ queued: 3, dropped: 2 });
    const stuck = recorder.flush();
    // While the write hangs, recording goes on at once and drops beyond the queue.
    for (let i = 0; i < 4; i++) recorder.record(answered(NOW + 10 + i, 'int_a'));
    expect(recorder.stats()).toMatchObject({ queued: 3, dropped: 3 });
    await vi.waitFor(() => expect(written).toHaveLength(1));
    release();
    await stuck;
    expect(written[0]?.log).toHaveLength(3);
    expect(written[0]?.counts).toEqual([expect.objectContaining({ requests: 5, items: 10 })]);
    const next = recorder.flush();
    await vi.waitFor(() => expect(written).toHaveLength(2));
    release();
    await next;
    // Dropped from the log, still counted: 4 requests of the second flush.
    expect(written[1]?.log).toHaveLength(3);
    expect(written[1]?.counts).toEqual([expect.objectContaining({ requests: 4 })]);
    expect(written[1]?.lastUses).toContainEqual(expect.objectContaining({ kind: 'integration', at: NOW + 13 }));
    expect(recorder.stats()).toMatchObject({ queued: 0, dropped: 3, flushes: 2 });
  });

  it('keeps a failed flush for the next one, as far as the queue has room', async () => {
    let fail = true;
    const written: UsageBatch[] = [];
    const store = {
      appendUsage: async (batch: UsageBatch) => {
        if (fail) throw new Error('database away');
        written.push(batch);
      },
      getEntity: async () => undefined,
    } as unknown as Store;
    const errors: unknown[] = [];
    const recorder = new UsageRecorder({
      store,
      clock: new ManualClock(NOW),
      limits: { requestLogQueue: 3, requestLogFlushMs: 60_000 },
      onError: (error) => errors.push(error),
    });
    recorder.record(answered(NOW, 'int_a'));
    recorder.record(answered(NOW + 1, 'int_a'));
    await recorder.flush();
    expect(errors).toHaveLength(1);
    recorder.record(answered(NOW + 2, 'int_a'));
    recorder.record(answered(NOW + 3, 'int_a'));
    fail = false;
    await recorder.flush();
    // The failed flush's rows went back first; the queue then had room for one more, and the last is dropped.
    expect(written[0]?.log.map((r) => r.at)).toEqual([NOW, NOW + 1, NOW + 2]);
    expect(written[0]?.counts).toEqual([expect.objectContaining({ requests: 4, items: 8 })]);
    expect(recorder.stats()).toMatchObject({ dropped: 1, failedFlushes: 1, flushes: 1 });
  });
});
