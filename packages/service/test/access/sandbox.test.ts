import { expect, it } from 'vitest';
import {
  holdNotReady,
  parseDuration,
  refuseCursors,
  removeRecord,
  setTeamCapability,
} from '../../src/access/sandbox.js';
import { AdminError } from '../../src/errors/admin-error.js';
import { markRestore } from '../../src/feed/feed-epoch.js';
import { feedPage } from '../../src/feed/feed-page.js';
import type { Store } from '../../src/store/store.js';
import { sandboxTeamKey } from '../../src/write/commands/meta-state.js';
import type { LeadState } from '../../src/write/types.js';
import { expectApiError, type FeedPageJson, feedWorld, SECOND, T0, TEAM } from '../feed/feed-world.js';
import { describeEachBackend } from '../support/backends.js';

// The sandbox fault switches on the store side (docs/testing-your-consumer.md): the feed's answer to
// cursors issued before a sandbox cursor change, and the refusal of live teams. The consumer's side runs
// against the real service in packages/client/test/e2e/sandbox-faults.test.ts.

const EXAMPLE = 'team_Example1';

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AdminError);
  return (error as AdminError).code;
}

describeEachBackend('sandbox fault switches', (makeStore) => {
  let store: Store | undefined;

  const world = async () => {
    const w = await feedWorld(async () => {
      store = await makeStore();
      return store;
    });
    await w.apply(
      { type: 'team.upsert', at: T0, team: EXAMPLE, organization: 'org_1', livemode: false, captured_at: T0 },
      { type: 'lead.created', at: T0, team: EXAMPLE, lead: 'lead_Ex1', status: 'new' },
      { type: 'lead.created', at: T0, team: EXAMPLE, lead: 'lead_Ex2', status: 'new' },
    );
    w.clock.advance(20 * SECOND);
    const principal = { ...w.principal, livemode: false, teams: [EXAMPLE] };
    const read = async (cursor?: string) =>
      JSON.parse(
        (
          await feedPage(
            { store: w.store, clock: w.clock, limits: w.limits, codec: w.codec, access: { checkTeam: async () => {} } },
            { principal, team: EXAMPLE, cursor, limit: 100 },
          )
        ).json.toString(),
      ) as FeedPageJson;
    return { w, read };
  };

  it('after expire-cursors an earlier cursor gets 410 and a later one works; after require-resync 409; a marked restore stays 409', async () => {
    const { w, read } = await world();
    try {
      const before = (await read()).next_cursor;
      await refuseCursors(w.store, EXAMPLE, 'sync_cursor_expired');
      await expectApiError(read(before), 'sync_cursor_expired');
      const fresh = await read();
      expect(fresh.data.map((i) => i.id)).toContain('lead_Ex1');
      await expect(read(fresh.next_cursor)).resolves.toMatchObject({ has_more: false });

      await refuseCursors(w.store, EXAMPLE, 'resync_required');
      await expectApiError(read(fresh.next_cursor), 'resync_required');
      await expectApiError(read(before), 'resync_required');
      const after = (await read()).next_cursor;
      await expect(read(after)).resolves.toMatchObject({ has_more: false });

      // A restore mark outranks the sandbox: 409 even when the sandbox last chose expiry.
      await refuseCursors(w.store, EXAMPLE, 'sync_cursor_expired');
      const current = (await read()).next_cursor;
      await markRestore(w.store);
      await expectApiError(read(current), 'resync_required');
      // The live team's cursors are untouched by the example team's switches.
      const live = (await w.read({ team: TEAM })).page.next_cursor;
      await refuseCursors(w.store, EXAMPLE, 'sync_cursor_expired');
      await expect(w.read({ team: TEAM, cursor: live })).resolves.toBeDefined();
    } finally {
      await store?.close();
    }
  });

  it('erase through the write side: the record is removed with reason erased and the feed carries the removal', async () => {
    const { w, read } = await world();
    try {
      const cursor = (await read()).next_cursor;
      await expect(removeRecord(w.store, w.clock, EXAMPLE, 'lead_Ex1', 'erased')).resolves.toEqual({
        team: EXAMPLE,
        record: 'lead_Ex1',
        removed: 'erased',
      });
      expect((await w.store.getRecord('lead', 'lead_Ex1'))?.removed).toBe('erased');
      w.clock.advance(20 * SECOND);
      const page = await read(cursor);
      expect(page.data).toContainEqual(expect.objectContaining({ id: 'lead_Ex1', removed: { reason: 'erased' } }));
      expect(await refusal(removeRecord(w.store, w.clock, EXAMPLE, 'lead_Ex1', 'deleted'))).toBe('invalid_argument');
      expect(await refusal(removeRecord(w.store, w.clock, EXAMPLE, 'lead_Nobody', 'erased'))).toBe('not_found');
      expect(await refusal(removeRecord(w.store, w.clock, EXAMPLE, 'board_x', 'erased'))).toBe('invalid_argument');
    } finally {
      await store?.close();
    }
  });

  it('a live team is refused with live_team and nothing is stored for it', async () => {
    const { w } = await world();
    try {
      expect(await refusal(refuseCursors(w.store, TEAM, 'sync_cursor_expired'))).toBe('live_team');
      expect(await refusal(holdNotReady(w.store, w.clock, TEAM, 60_000))).toBe('live_team');
      expect(await refusal(setTeamCapability(w.store, TEAM, 'leads.list', true))).toBe('live_team');
      expect(await refusal(removeRecord(w.store, w.clock, TEAM, 'lead_Ex1', 'erased'))).toBe('live_team');
      expect(await refusal(refuseCursors(w.store, 'team_Missing', 'resync_required'))).toBe('not_found');
      expect(await w.store.getMeta(sandboxTeamKey(TEAM))).toBeUndefined();
    } finally {
      await store?.close();
    }
  });

  it('a sandbox switch never writes to a live team, even through a cascade', async () => {
    const { w } = await world();
    try {
      // A live lead transferred into the example team, as a database written before such transfers were refused
      // holds it: erasing or deleting the copy would set the live original's transferred_to.lead to null.
      await w.apply({ type: 'lead.created', at: T0, team: TEAM, lead: 'lead_Live', status: 'new' });
      await w.store.write(async (tx) => {
        const live = await tx.getEntity<LeadState>('lead', 'lead_Live');
        const copy = await tx.getEntity<LeadState>('lead', 'lead_Ex1');
        if (!live || !copy) throw new Error('fixture leads missing');
        live.state.transferredTo = { team: EXAMPLE, lead: 'lead_Ex1' };
        copy.state.transferredFrom = { team: TEAM, lead: 'lead_Live' };
        await tx.putEntity(live);
        await tx.putEntity(copy);
      });
      const liveFeed = await w.store.readFeed(TEAM, 0, 10_000);
      const liveVersion = (await w.store.getRecord('lead', 'lead_Live'))?.version;
      for (const how of ['erased', 'deleted'] as const) {
        const refused = await removeRecord(w.store, w.clock, EXAMPLE, 'lead_Ex1', how).catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(AdminError);
        expect((refused as AdminError).code).toBe('live_team');
        expect((refused as AdminError).message).toContain(TEAM);
      }
      // Nothing changed on either side: the live lead and feed as before, the copy still served.
      expect((await w.store.getRecord('lead', 'lead_Live'))?.version).toBe(liveVersion);
      expect(await w.store.readFeed(TEAM, 0, 10_000)).toEqual(liveFeed);
      expect((await w.store.getRecord('lead', 'lead_Ex1'))?.removed).toBeNull();
      // A record of the example team that reaches no live team is still removed.
      await removeRecord(w.store, w.clock, EXAMPLE, 'lead_Ex2', 'erased');
      expect((await w.store.getRecord('lead', 'lead_Ex2'))?.removed).toBe('erased');
    } finally {
      await store?.close();
    }
  });
});

it('durations: 500ms, 30s, 5m, 2h; anything else or beyond 7 days is invalid_argument', () => {
  expect([parseDuration('500ms'), parseDuration('30s'), parseDuration('5m'), parseDuration('2h')]).toEqual([
    500, 30_000, 300_000, 7_200_000,
  ]);
  for (const bad of ['5', '0s', '1d', '-5m', '169h', ''])
    expect(() => parseDuration(bad), bad).toThrowError(/--for must be a duration/);
});
