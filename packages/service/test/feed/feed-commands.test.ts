import { Command } from 'commander';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { registerFeedCommands } from '../../src/cli/feed-commands.js';
import { isCaptured } from '../../src/feed/capture.js';
import { currentFeedEpoch } from '../../src/feed/feed-epoch.js';
import { requestCapture } from '../../src/write/commands/capture.js';
import { INITIAL_FEED_EPOCH } from '../../src/write/commands/meta-state.js';
import { describeEachBackend } from '../support/backends.js';
import { DAY, expectApiError, type FeedWorld, feedWorld, newLead, SECOND, T0, TEAM } from './feed-world.js';

// `crm-export admin feed ...`, run the way the CLI runs it (the lead wires it into the program).

describeEachBackend('crm-export admin feed', (makeStore) => {
  let w: FeedWorld;
  let out: string[];
  beforeEach(() => {
    out = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out.push(String(chunk));
      return true;
    });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await w?.store.close();
  });

  async function feedCommand(...args: string[]): Promise<Record<string, unknown>> {
    out = [];
    const program = new Command('crm-export').exitOverride();
    registerFeedCommands(program, async () => ({ store: w.store, close: async () => {} }));
    await program.parseAsync(['admin', 'feed', ...args, '--json'], { from: 'user' });
    return JSON.parse(out.join('')) as Record<string, unknown>;
  }

  it('mark-restore: every older cursor then gets 409 resync_required', async () => {
    w = await feedWorld(makeStore);
    await w.apply(newLead('lead_1'));
    w.clock.advance(10 * SECOND);
    const old = (await w.readAll()).cursor;
    const result = await feedCommand('mark-restore', '--yes');
    expect(result).toMatchObject({ markedRestore: true, previous: INITIAL_FEED_EPOCH });
    expect(result.epoch).toBe(await currentFeedEpoch(w.store));
    await expectApiError(w.read({ cursor: old }), 'resync_required');
    // A second restore (of a backup taken before the first one) also invalidates the cursors between.
    const between = (await w.readAll()).cursor;
    await feedCommand('mark-restore', '--yes');
    await expectApiError(w.read({ cursor: between }), 'resync_required');
  });

  it('trim runs the retention job once', async () => {
    w = await feedWorld(makeStore);
    // The command runs on the system clock: one removal recorded 46 days ago, one 44 days ago.
    w.clock.set(Date.now() - 46 * DAY);
    await w.apply(newLead('lead_1'), { type: 'lead.deleted', at: T0, lead: 'lead_1' });
    w.clock.set(Date.now() - 44 * DAY);
    await w.apply(newLead('lead_2'), { type: 'lead.deleted', at: T0, lead: 'lead_2' });
    const result = await feedCommand('trim');
    expect(result.trimmed).toBeGreaterThan(0);
    const removals = (await w.store.readFeed(TEAM, 0, 1000)).filter((f) => f.removed && f.kind === 'lead');
    expect(removals.map((f) => f.id)).toEqual(['lead_2']);
  });

  it('capture prepares the teams waiting for it', async () => {
    w = await feedWorld(makeStore, {}, false);
    await requestCapture(w.store, w.clock, [TEAM], { prepareNow: false });
    expect(await feedCommand('capture')).toEqual({ captured: [TEAM] });
    expect(await isCaptured(w.store, TEAM)).toBe(true);
    expect(await feedCommand('capture')).toEqual({ captured: [] });
  });
});
