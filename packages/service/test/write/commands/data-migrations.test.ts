import { afterEach, expect, it } from 'vitest';
import { iso } from '../../../src/clock.js';
import { FEED_KINDS, type RecordKind } from '../../../src/schemas/enums.js';
import type { Store } from '../../../src/store/store.js';
import { COMMANDS, runCommand } from '../../../src/write/commands/commands.js';
import {
  DATA_MIGRATIONS,
  type DataStep,
  pendingDataSteps,
  republish,
  runDataMigrations,
} from '../../../src/write/commands/data-migrations.js';
import { describeEachBackend } from '../../support/backends.js';
import { type Json, newLead, OTHER_TEAM, T0, TEAM, type World, world } from '../events/fixture.js';

// Data migrations (write/commands/data-migrations.ts): a `republish` step brings records stored before a field was
// added to their projection up to it, as an ordinary change (a version and a feed entry each), once.

const STEP: DataStep = { name: '0001_lead_source_detail', run: republish(['lead']) };

/**
 * Rewrites a lead's stored row as an older build would have stored it: the same version and time, without
 * `source_detail` (as if the field had just been added). Returns the JSON the projection gives.
 */
async function storeWithoutField(store: Store, id: string): Promise<string> {
  const current = (await store.getRecord('lead', id)) as unknown as { json: string };
  const record = JSON.parse(current.json) as Json;
  const { source_detail: _dropped, ...old } = record;
  await store.write((tx) =>
    tx.putRecord({
      kind: 'lead',
      id,
      team: record.team,
      lead: null,
      board: record.board,
      stage: record.stage,
      status: record.status,
      email: null,
      phone: null,
      version: record.version,
      updatedAt: record.updated_at,
      json: JSON.stringify(old),
    }),
  );
  return current.json;
}

/** The JSON `projected` has at a new version and time (same key order). */
function at(projected: string, version: number, updatedAt: string): string {
  return JSON.stringify({ ...(JSON.parse(projected) as Json), version, updated_at: updatedAt });
}

/** A store whose `write` fails from the `failAt`-th call on (1-based): a process stopped part way. */
function failingFrom(store: Store, failAt: number): Store {
  let calls = 0;
  return new Proxy(store, {
    get(target, member) {
      if (member === 'write') {
        return <T>(fn: Parameters<Store['write']>[0]): Promise<T> => {
          calls += 1;
          if (calls >= failAt) return Promise.reject(new Error('stopped'));
          return target.write(fn) as Promise<T>;
        };
      }
      const value = Reflect.get(target, member, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const storedJson = async (store: Store, id: string) =>
  ((await store.getRecord('lead', id)) as unknown as { json: string | null }).json;

it('the shipped data migrations have unique names in order', () => {
  const names = DATA_MIGRATIONS.map((s) => s.name);
  expect(new Set(names).size).toBe(names.length);
  expect([...names].sort()).toEqual(names);
});

describeEachBackend('data migrations', (makeStore) => {
  const worlds: World[] = [];
  afterEach(async () => {
    for (const w of worlds.splice(0)) await w.store.close();
  });
  const start = async (leads: string[]) => {
    const w = await world(makeStore);
    worlds.push(w);
    for (const id of leads) await w.apply(newLead(id, { source_detail: `from ${id}` }));
    return w;
  };

  it('republish gives each stored lead lacking a projected field the projection, one version and feed entry each, once', async () => {
    const w = await start(['lead_1', 'lead_2', 'lead_3']);
    const projected1 = await storeWithoutField(w.store, 'lead_1');
    const projected3 = await storeWithoutField(w.store, 'lead_3');
    const untouched = await storedJson(w.store, 'lead_2');
    const head = await w.store.feedHead(TEAM);
    w.clock.advance(60_000);
    const now = iso(w.clock.now());

    expect(await pendingDataSteps(w.store, [STEP])).toEqual([STEP.name]);
    expect(await runDataMigrations(w.store, w.clock, [STEP])).toEqual([STEP.name]);

    expect(await storedJson(w.store, 'lead_1')).toBe(at(projected1, 2, now));
    expect(await storedJson(w.store, 'lead_3')).toBe(at(projected3, 2, now));
    expect(await storedJson(w.store, 'lead_2')).toBe(untouched);
    expect(await w.version('lead', 'lead_2')).toBe(1);
    const added = (await w.store.readFeed(TEAM, head, 100)).map((f) => [f.kind, f.id, f.version, f.body]);
    expect(added).toEqual([
      ['lead', 'lead_1', 2, at(projected1, 2, now)],
      ['lead', 'lead_3', 2, at(projected3, 2, now)],
    ]);
    expect(await w.store.getMeta(`data_migration:${STEP.name}`)).toBe(now);
    expect(await pendingDataSteps(w.store, [STEP])).toEqual([]);

    // Applied: a second run does nothing, and the step itself run again would write nothing either.
    const after = await w.store.feedHead(TEAM);
    expect(await runDataMigrations(w.store, w.clock, [STEP])).toEqual([]);
    await STEP.run(w.store, w.clock, {});
    expect(await w.store.feedHead(TEAM)).toBe(after);
    expect(await w.version('lead', 'lead_1')).toBe(2);
  });

  it('a republish stopped after its first chunk finishes on the next run without a second version', async () => {
    const ids = ['lead_1', 'lead_2', 'lead_3', 'lead_4', 'lead_5'];
    const w = await start(ids);
    for (const id of ids) await storeWithoutField(w.store, id);
    const head = await w.store.feedHead(TEAM);

    // The first write is the first chunk; the second chunk's fails.
    await expect(runDataMigrations(failingFrom(w.store, 2), w.clock, [STEP], { chunk: 2 })).rejects.toThrow('stopped');
    expect(await Promise.all(ids.map((id) => w.version('lead', id)))).toEqual([2, 2, 1, 1, 1]);
    expect(await pendingDataSteps(w.store, [STEP])).toEqual([STEP.name]);

    expect(await runDataMigrations(w.store, w.clock, [STEP], { chunk: 2 })).toEqual([STEP.name]);
    expect(await Promise.all(ids.map((id) => w.version('lead', id)))).toEqual([2, 2, 2, 2, 2]);
    const added = (await w.store.readFeed(TEAM, head, 100)).map((f) => `${f.id}@${f.version}`);
    expect(added).toEqual(ids.map((id) => `${id}@2`));
    for (const id of ids) expect(JSON.parse((await storedJson(w.store, id)) as string)).toHaveProperty('source_detail');
  });

  it('a republish chunk whose first attempt was rolled back writes one version, as PostgreSQL retries it', async () => {
    const w = await start(['lead_1']);
    const projected = await storeWithoutField(w.store, 'lead_1');
    const head = await w.store.feedHead(TEAM);
    const rolledBack = new Error('rolled back');
    await w.store
      .write(async (tx) => {
        await COMMANDS['data.republish'].tx(tx, { kind: 'lead', ids: ['lead_1'], now: w.clock.now() });
        throw rolledBack;
      })
      .catch((error: unknown) => {
        if (error !== rolledBack) throw error;
      });
    expect(await runCommand(w.store, 'data.republish', { kind: 'lead', ids: ['lead_1'], now: w.clock.now() })).toEqual([
      'lead_1',
    ]);
    expect(await storedJson(w.store, 'lead_1')).toBe(at(projected, 2, iso(w.clock.now())));
    expect((await w.store.readFeed(TEAM, head, 100)).map((f) => `${f.id}@${f.version}`)).toEqual(['lead_1@2']);
  });

  it('republishing every kind over records stored by this build writes nothing', async () => {
    const w = await start(['lead_1', 'lead_2']);
    await w.apply(
      {
        type: 'call.recorded',
        at: T0,
        team: TEAM,
        call: 'call_1',
        lead: 'lead_1',
        line: 'own_line',
        direction: 'inbound',
      },
      { type: 'conversation.started', at: T0, team: TEAM, conversation: 'conv_1', lead: 'lead_1', channel: 'sms' },
    );
    const kinds: RecordKind[] = [...FEED_KINDS.filter((k) => k !== 'activity'), 'team', 'member', 'booking_service'];
    const heads = [await w.store.feedHead(TEAM), await w.store.feedHead(OTHER_TEAM)];
    const versions = await Promise.all(['lead_1', 'lead_2'].map((id) => w.version('lead', id)));
    const all: DataStep = { name: '0001_all', run: republish(kinds as Parameters<typeof republish>[0]) };
    expect(await runDataMigrations(w.store, w.clock, [all])).toEqual(['0001_all']);
    expect([await w.store.feedHead(TEAM), await w.store.feedHead(OTHER_TEAM)]).toEqual(heads);
    expect(await Promise.all(['lead_1', 'lead_2'].map((id) => w.version('lead', id)))).toEqual(versions);
  });
});
