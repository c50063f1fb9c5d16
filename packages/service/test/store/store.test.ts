import { afterEach, beforeEach, expect, it } from 'vitest';
import type { RecordRow, Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { putMeta } from '../support/meta.js';

function lead(id: string, team: string, extra: Partial<RecordRow> = {}): RecordRow {
  return {
    kind: 'lead',
    id,
    team,
    lead: null,
    board: null,
    stage: null,
    status: 'new',
    email: null,
    phone: null,
    version: 1,
    updatedAt: '2026-01-01T00:00:00.000Z',
    json: JSON.stringify({ id }),
    ...extra,
  };
}

describeEachBackend('Store', (makeStore) => {
  let store: Store;
  beforeEach(async () => {
    store = await makeStore();
  });
  afterEach(async () => {
    await store.close();
  });

  it('keyset pagination returns every live record once, in a stable order', async () => {
    await store.write(async (tx) => {
      for (let i = 0; i < 25; i++) await tx.putRecord(lead(`lead_${i}`, 'team_a'));
      await tx.putRecord(lead('lead_other', 'team_b'));
    });
    const seen: string[] = [];
    let after = 0;
    for (;;) {
      const page = await store.listRecords({ team: 'team_a', kind: 'lead', after, limit: 10 });
      if (page.length === 0) break;
      seen.push(...page.map((r) => JSON.parse(r.json).id));
      after = page[page.length - 1]!.seq;
    }
    expect(seen).toHaveLength(25);
    expect(new Set(seen).size).toBe(25);
    expect(seen).not.toContain('lead_other');
  });

  it('a new version replaces a record in place and keeps its keyset position', async () => {
    await store.write(async (tx) => {
      await tx.putRecord(lead('lead_a', 't'));
      await tx.putRecord(lead('lead_b', 't'));
    });
    const before = await store.getRecord('lead', 'lead_a');
    await store.write((tx) => tx.putRecord(lead('lead_a', 't', { version: 2, json: '{"v":2}' })));
    const after = await store.getRecord('lead', 'lead_a');
    expect(after?.seq).toBe(before?.seq);
    expect(after?.version).toBe(2);
    const page = await store.listRecords({ team: 't', kind: 'lead', after: 0, limit: 10 });
    expect(page.map((r) => r.json)).toEqual(['{"v":2}', '{"id":"lead_b"}']);
  });

  it('filters by board, stage, status and lead', async () => {
    await store.write(async (tx) => {
      await tx.putRecord(lead('lead_1', 't', { board: 'brd_1', stage: 'stg_1', status: 'new' }));
      await tx.putRecord(lead('lead_2', 't', { board: 'brd_2', stage: 'stg_2', status: 'lost' }));
      await tx.putRecord({ ...lead('call_1', 't', { lead: 'lead_2' }), kind: 'call' });
    });
    const ids = async (by: 'board' | 'stage' | 'status' | 'lead', value: string, kind: 'lead' | 'call' = 'lead') =>
      (await store.listRecords({ team: 't', kind, filter: { by, value }, after: 0, limit: 10 })).map(
        (r) => JSON.parse(r.json).id,
      );
    expect(await ids('board', 'brd_1')).toEqual(['lead_1']);
    expect(await ids('stage', 'stg_2')).toEqual(['lead_2']);
    expect(await ids('status', 'lost')).toEqual(['lead_2']);
    expect(await ids('lead', 'lead_2', 'call')).toEqual(['call_1']);
  });

  it('a removed record becomes a tombstone without its JSON or personal columns', async () => {
    await store.write((tx) => tx.putRecord(lead('lead_x', 't', { email: 'a@b.c', phone: '+4930123456' })));
    await store.write((tx) => tx.removeRecord('lead', 'lead_x', 'erased', 2, '2026-01-02T00:00:00.000Z'));
    const rec = await store.getRecord('lead', 'lead_x');
    expect(rec).toMatchObject({ removed: 'erased', version: 2, json: null });
    expect(await store.listRecords({ team: 't', kind: 'lead', after: 0, limit: 10 })).toEqual([]);
    expect(await store.searchLeads({ team: 't', email: 'a@b.c', after: 0, limit: 10 })).toEqual([]);
    expect(await store.getRecords('lead', ['lead_x'])).toEqual([]);
  });

  it('search matches the email or the phone within the team', async () => {
    await store.write(async (tx) => {
      await tx.putRecord(lead('lead_1', 't', { email: 'ana@example.com' }));
      await tx.putRecord(lead('lead_2', 't', { phone: '+4915112345678' }));
      await tx.putRecord(lead('lead_3', 'u', { email: 'ana@example.com' }));
    });
    const found = await store.searchLeads({
      team: 't',
      email: 'ana@example.com',
      phone: '+4915112345678',
      after: 0,
      limit: 10,
    });
    expect(found.map((r) => JSON.parse(r.json).id)).toEqual(['lead_1', 'lead_2']);
  });

  it('feed positions are per team, start at 1 and follow commit order', async () => {
    const entry = (team: string, id: string) => ({
      team,
      kind: 'lead' as const,
      id,
      version: 1,
      recordedAt: 1000,
      body: '{}',
      removed: null,
    });
    await store.write(async (tx) => {
      expect(await tx.appendFeed(entry('team_a', 'lead_1'))).toBe(1);
      expect(await tx.appendFeed(entry('team_b', 'lead_2'))).toBe(1);
      expect(await tx.appendFeed(entry('team_a', 'lead_3'))).toBe(2);
    });
    const rows = await store.readFeed('team_a', 0, 10);
    expect(rows.map((r) => [r.pos, r.id])).toEqual([
      [1, 'lead_1'],
      [2, 'lead_3'],
    ]);
    expect(await store.readFeed('team_a', 1, 10)).toHaveLength(1);
    expect(await store.feedHead('team_a')).toBe(2);
    expect(await store.feedHead('team_none')).toBe(0);
  });

  it('a failed write transaction leaves nothing behind, feed positions included', async () => {
    await expect(
      store.write(async (tx) => {
        await tx.putRecord(lead('lead_1', 't'));
        await tx.appendFeed({
          team: 't',
          kind: 'lead',
          id: 'lead_1',
          version: 1,
          recordedAt: 1,
          body: '{}',
          removed: null,
        });
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await store.getRecord('lead', 'lead_1')).toBeUndefined();
    expect(await store.feedHead('t')).toBe(0);
    await store.write((tx) =>
      tx.appendFeed({ team: 't', kind: 'lead', id: 'l', version: 1, recordedAt: 1, body: '{}', removed: null }),
    );
    expect(await store.feedHead('t')).toBe(1);
  });

  it('readers never see a write transaction that has not committed', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const pending = store.write(async (tx) => {
      await tx.putRecord(lead('lead_1', 't'));
      await gate;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(await store.getRecord('lead', 'lead_1')).toBeUndefined();
    release();
    await pending;
    expect(await store.getRecord('lead', 'lead_1')).toBeDefined();
  });

  it('purgeFeed drops every entry of a record and trimFeed applies both retention rules', async () => {
    const e = (id: string, version: number, recordedAt: number, removed: 'erased' | null = null) => ({
      team: 't',
      kind: 'lead' as const,
      id,
      version,
      recordedAt,
      body: removed ? null : '{}',
      removed,
    });
    await store.write(async (tx) => {
      await tx.appendFeed(e('lead_a', 1, 100));
      await tx.appendFeed(e('lead_a', 2, 200)); // supersedes v1
      await tx.appendFeed(e('lead_b', 1, 100));
      await tx.appendFeed(e('lead_c', 2, 150, 'erased'));
      await tx.appendFeed(e('lead_d', 1, 100));
      await tx.appendFeed(e('lead_d', 2, 900)); // supersedes v1, but too recently to trim
    });
    await store.write((tx) => tx.purgeFeed('lead', 'lead_b'));
    const dropped = await store.trimFeed(160, 500);
    expect(dropped).toBe(2);
    const left = (await store.readFeed('t', 0, 100)).map((r) => `${r.id}@${r.version}`);
    expect(left).toEqual(['lead_a@2', 'lead_d@1', 'lead_d@2']);
  });

  it('entities are found by team and by parent in insertion order', async () => {
    await store.write(async (tx) => {
      await tx.putEntity({ kind: 'call', id: 'call_2', team: 't', parent: 'lead_1', state: { n: 2 } });
      await tx.putEntity({ kind: 'call', id: 'call_1', team: 't', parent: 'lead_1', state: { n: 1 } });
      await tx.putEntity({ kind: 'call', id: 'call_3', team: 'u', parent: 'lead_9', state: { n: 3 } });
      await tx.putEntity({ kind: 'call', id: 'call_2', team: 't', parent: 'lead_1', state: { n: 22 } });
    });
    const byParent = await store.findEntities<{ n: number }>('call', { parent: 'lead_1' });
    expect(byParent.map((e) => [e.id, e.state.n])).toEqual([
      ['call_2', 22],
      ['call_1', 1],
    ]);
    expect((await store.findEntities('call', { team: 'u' })).map((e) => e.id)).toEqual(['call_3']);
    await store.write((tx) => tx.deleteEntity('call', 'call_1'));
    expect(await store.getEntity('call', 'call_1')).toBeUndefined();
  });

  it('settings persist', async () => {
    expect(await store.getMeta('x')).toBeUndefined();
    await putMeta(store, 'x', '1');
    await putMeta(store, 'x', '2');
    expect(await store.getMeta('x')).toBe('2');
  });

  it('migrations are safe to run again', async () => {
    await store.migrate();
    await store.ping();
  });
});
