import { afterEach, expect, it } from 'vitest';
import { assertRecordCaptured, isCaptured } from '../../src/feed/capture.js';
import { startFeedJobs } from '../../src/feed/feed-jobs.js';
import { capturePending, requestCapture } from '../../src/write/commands/capture.js';
import type { TeamState } from '../../src/write/types.js';
import { describeEachBackend } from '../support/backends.js';
import {
  expectApiError,
  type FeedWorld,
  feedWorld,
  keys,
  newLead,
  OTHER_TEAM,
  SECOND,
  T0,
  TEAM,
} from './feed-world.js';

// Capture: a team's data is prepared once, the first time the team is added to any key.

describeEachBackend('changes feed: capture', (makeStore) => {
  let w: FeedWorld;
  afterEach(async () => w?.store.close());

  it('team endpoints answer 409 capture_not_ready until the team is prepared', async () => {
    w = await feedWorld(makeStore, {}, false);
    await w.apply(newLead('lead_1'));
    await expectApiError(w.read(), 'capture_not_ready');
    expect(await requestCapture(w.store, w.clock, [TEAM], { prepareNow: false })).toEqual([TEAM]);
    expect(await requestCapture(w.store, w.clock, [TEAM], { prepareNow: false })).toEqual([]); // once per team
    await expectApiError(w.read(), 'capture_not_ready');
    expect(await capturePending(w.store, w.clock)).toEqual([TEAM]);
    w.clock.advance(10 * SECOND);
    const { items } = await w.readAll();
    expect(keys(items)).toEqual(
      expect.arrayContaining(['lead:lead_1', 'lead_attribution:lead_1', 'lead_response:lead_1']),
    );
    // OTHER_TEAM was never requested: still not prepared.
    await expectApiError(w.read({ team: OTHER_TEAM }), 'capture_not_ready');
    expect((await w.store.getEntity<TeamState>('team', TEAM))?.state.capturedAt).toBe(
      new Date(w.clock.now() - 10 * SECOND).toISOString(),
    );
  });

  it('a new key prepares its teams before it is returned', async () => {
    w = await feedWorld(makeStore, {}, false);
    await w.apply(newLead('lead_1'));
    expect(await requestCapture(w.store, w.clock, [TEAM])).toEqual([TEAM]);
    expect(await isCaptured(w.store, TEAM)).toBe(true);
    expect(await isCaptured(w.store, OTHER_TEAM)).toBe(false);
  });

  it('single records not yet prepared answer 404 resource_missing', async () => {
    w = await feedWorld(makeStore, {}, false);
    await expectApiError(assertRecordCaptured(w.store, TEAM), 'resource_missing');
    await requestCapture(w.store, w.clock, [TEAM], { prepareNow: false });
    await capturePending(w.store, w.clock);
    await expect(assertRecordCaptured(w.store, TEAM)).resolves.toBeUndefined();
  });

  it('a team an integration names is prepared even without a request', async () => {
    w = await feedWorld(makeStore, {}, false);
    await w.store.write((tx) =>
      tx.putEntity({
        kind: 'integration',
        id: 'prn_x',
        team: null,
        parent: 'org_1',
        state: {
          name: 'x',
          organization: 'org_1',
          teams: [OTHER_TEAM],
          allowlist: [],
          status: 'active',
          livemode: true,
          createdAt: T0,
          revokedAt: null,
        },
      }),
    );
    expect(await capturePending(w.store, w.clock)).toEqual([OTHER_TEAM]);
    expect(await isCaptured(w.store, OTHER_TEAM)).toBe(true);
    expect(await isCaptured(w.store, TEAM)).toBe(false);
  });

  it('a prepared team keeps its capture when the team changes later', async () => {
    w = await feedWorld(makeStore, {}, false);
    await requestCapture(w.store, w.clock, [TEAM], { prepareNow: false });
    await capturePending(w.store, w.clock);
    await w.apply({ type: 'team.upsert', at: T0, team: TEAM, name: 'Renamed' });
    const state = (await w.store.getEntity<TeamState>('team', TEAM))?.state;
    expect(state?.capturedAt).not.toBeNull();
    expect(state?.captureRequestedAt).not.toBeNull();
  });

  it('serve runs capture and retention as background jobs', async () => {
    w = await feedWorld(makeStore, {}, false);
    await requestCapture(w.store, w.clock, [TEAM], { prepareNow: false });
    const errors: unknown[] = [];
    const stop = startFeedJobs({
      store: w.store,
      clock: w.clock,
      limits: w.limits,
      captureEveryMs: 20,
      onError: (_j, e) => errors.push(e),
    });
    for (let i = 0; i < 100 && !(await isCaptured(w.store, TEAM)); i++) await new Promise((r) => setTimeout(r, 20));
    await stop();
    expect(errors).toEqual([]);
    expect(await isCaptured(w.store, TEAM)).toBe(true);
  });
});
