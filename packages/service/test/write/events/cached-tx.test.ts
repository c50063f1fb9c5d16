import { expect, it } from 'vitest';
import type { Entity } from '../../../src/store/store.js';
import { CachedTx } from '../../../src/write/events/cached-tx.js';
import { describeEachBackend } from '../../support/backends.js';

// The write side reads through a per-transaction cache and writes rows once per transaction. What it
// reads must always be what the store itself would answer at that point of the transaction.

type S = { n: number; tags: string[] };
const entity = (id: string, parent: string | null, n = 0): Entity<S> => ({
  kind: 'conversation',
  id,
  team: 'team_A1',
  parent,
  state: { n, tags: ['a'] },
});

describeEachBackend('write cache', (makeStore) => {
  it('findEntities answers as the store does: insertion order, and a relinked entity keeps its place', async () => {
    const store = await makeStore();
    try {
      await store.write(async (tx) => {
        const cache = new CachedTx(tx, { deferWrites: true });
        for (const [id, parent] of [
          ['c1', 'lead_1'],
          ['c2', 'lead_2'],
          ['c3', 'lead_1'],
        ] as const)
          await cache.putEntity(entity(id, parent));
        expect((await cache.findEntities('conversation', { parent: 'lead_1' })).map((e) => e.id)).toEqual(['c1', 'c3']);
        // New after the list was read: appended.
        await cache.putEntity(entity('c4', 'lead_1'));
        // Moved in from another lead: its place is its insertion order, not the end.
        await cache.getEntity('conversation', 'c2');
        await cache.putEntity(entity('c2', 'lead_1'));
        await cache.deleteEntity('conversation', 'c3');
        const cached = (await cache.findEntities('conversation', { parent: 'lead_1' })).map((e) => e.id);
        await cache.flush();
        const stored = (await tx.findEntities('conversation', { parent: 'lead_1' })).map((e) => e.id);
        expect(cached).toEqual(['c1', 'c2', 'c4']);
        expect(stored).toEqual(cached);
        expect((await cache.findEntities('conversation', { parent: 'lead_2' })).map((e) => e.id)).toEqual([]);
      });
    } finally {
      await store.close();
    }
  });

  it('a list that no moved entity now matches is read without writing the pending entities; one that a moved entity joins is read after them', async () => {
    const store = await makeStore();
    try {
      await store.write(async (tx) => {
        for (const [id, parent] of [
          ['c1', 'lead_1'],
          ['c2', 'lead_2'],
          ['c3', 'lead_1'],
          ['c4', 'lead_3'],
        ] as const)
          await tx.putEntity(entity(id, parent));
      });
      await store.write(async (tx) => {
        let writes = 0;
        const counted = new Proxy(tx, {
          get(target, name) {
            const value = Reflect.get(target, name);
            if (name === 'applyWrites') writes += 1;
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
        const cache = new CachedTx(counted, { deferWrites: true });
        // c1 leaves lead_1 (a removal redelivers it without a lead).
        await cache.putEntity({ ...(await cache.getEntity<S>('conversation', 'c1'))!, parent: null });
        expect((await cache.findEntities('conversation', { parent: 'lead_1' })).map((e) => e.id)).toEqual(['c3']);
        expect((await cache.findEntities('conversation', { parent: 'lead_2' })).map((e) => e.id)).toEqual(['c2']);
        expect(writes).toBe(0);
        // c4 joins lead_2: its place there is its insertion order, which only the store knows.
        await cache.putEntity({ ...(await cache.getEntity<S>('conversation', 'c4'))!, parent: 'lead_2' });
        expect((await cache.findEntities('conversation', { parent: 'lead_3' })).map((e) => e.id)).toEqual([]);
        expect(writes).toBe(0);
        await cache.putEntity(entity('c5', 'lead_1'));
        expect((await cache.findEntities('conversation', { parent: 'lead_1' })).map((e) => e.id)).toEqual(['c3', 'c5']);
        expect(
          (await cache.findEntities('conversation', { team: 'team_A1', parent: 'lead_2' })).map((e) => e.id),
        ).toEqual(['c2', 'c4']);
        expect(writes).toBe(1);
        await cache.flush();
        for (const parent of ['lead_1', 'lead_2', 'lead_3'])
          expect((await tx.findEntities('conversation', { parent })).map((e) => e.id)).toEqual(
            (await cache.findEntities('conversation', { parent })).map((e) => e.id),
          );
      });
    } finally {
      await store.close();
    }
  });

  it('a changed entity is only what was written: mutating what was read or written changes nothing', async () => {
    const store = await makeStore();
    try {
      await store.write(async (tx) => {
        const cache = new CachedTx(tx, { deferWrites: true });
        const written = entity('c1', 'lead_1', 1);
        await cache.putEntity(written);
        written.state.n = 99;
        const read = await cache.getEntity<S>('conversation', 'c1');
        expect(read?.state.n).toBe(1);
        read!.state.tags.push('b');
        expect((await cache.getEntity<S>('conversation', 'c1'))?.state.tags).toEqual(['a']);
        expect((await cache.findEntities<S>('conversation', { team: 'team_A1' }))[0]?.state).toEqual({
          n: 1,
          tags: ['a'],
        });
      });
      expect((await store.getEntity<S>('conversation', 'c1'))?.state).toEqual({ n: 1, tags: ['a'] });
    } finally {
      await store.close();
    }
  });

  it('deferred rows are written once, in first-write order, before the commit and before a removal', async () => {
    const store = await makeStore();
    try {
      const row = (id: string, version: number) => ({
        kind: 'call' as const,
        id,
        team: 'team_A1',
        lead: null,
        board: null,
        stage: null,
        status: null,
        email: null,
        phone: null,
        version,
        updatedAt: '2026-01-10T10:00:00.000Z',
        json: `{"id":"${id}","version":${version}}`,
      });
      await store.write(async (tx) => {
        const cache = new CachedTx(tx, { deferWrites: true });
        await cache.putRecord(row('call_b', 1));
        await cache.putRecord(row('call_a', 1));
        await cache.putRecord(row('call_b', 2));
        expect(await tx.getRecord('call', 'call_b')).toBeUndefined();
        expect((await cache.current('call', 'call_b'))?.version).toBe(2);
        await cache.putRecord(row('call_c', 1));
        await cache.removeRecord('call', 'call_c', 'deleted', 2, '2026-01-10T10:00:01.000Z');
        await cache.flush();
      });
      const [b, a, c] = await Promise.all(['call_b', 'call_a', 'call_c'].map((id) => store.getRecord('call', id)));
      expect(b?.version).toBe(2);
      expect(b!.seq).toBeLessThan(a!.seq);
      expect(c).toMatchObject({ removed: 'deleted', version: 2, json: null });
    } finally {
      await store.close();
    }
  });
  it('a list under a parent created in the same transaction is answered without the store, as the store answers after the flush', async () => {
    const store = await makeStore();
    try {
      await store.write(async (tx) => {
        const cache = new CachedTx(tx, { deferWrites: true });
        expect(await cache.getEntity('conversation', 'conv_new')).toBeUndefined();
        await cache.putEntity(entity('conv_new', 'lead_1'));
        for (const id of ['msg_2', 'msg_1', 'msg_3']) {
          expect(await cache.getEntity('message', id)).toBeUndefined();
          await cache.putEntity({
            kind: 'message',
            id,
            team: 'team_A1',
            parent: 'conv_new',
            state: { n: 0, tags: [] },
          });
        }
        await cache.deleteEntity('message', 'msg_1');
        const cached = (await cache.findEntities('message', { parent: 'conv_new' })).map((e) => e.id);
        await cache.flush();
        expect(cached).toEqual(['msg_2', 'msg_3']);
        expect((await tx.findEntities('message', { parent: 'conv_new' })).map((e) => e.id)).toEqual(cached);
      });
    } finally {
      await store.close();
    }
  });

  it('entities and records read ahead answer as single reads do, present or absent, and absent ones can be created', async () => {
    const store = await makeStore();
    try {
      const json = '{"id":"call_1","version":1}';
      const row = { kind: 'call' as const, id: 'call_1', team: 'team_A1', lead: null, board: null, stage: null };
      const filters = { status: null, email: null, phone: null, updatedAt: '2026-01-10T10:00:00.000Z' };
      await store.write(async (tx) => {
        await tx.putEntity(entity('c1', 'lead_1', 5));
        await tx.putRecord({ ...row, ...filters, version: 1, json });
      });
      await store.write(async (tx) => {
        const cache = new CachedTx(tx, { deferWrites: true });
        await cache.prefetch({
          entities: [
            { kind: 'conversation', id: 'c1' },
            { kind: 'conversation', id: 'c2' },
          ],
          records: [
            { kind: 'call', id: 'call_1' },
            { kind: 'call', id: 'call_2' },
          ],
        });
        expect(await cache.getEntity('conversation', 'c1')).toEqual(await tx.getEntity('conversation', 'c1'));
        expect(await cache.getEntity('conversation', 'c2')).toBeUndefined();
        expect(await cache.current('call', 'call_1')).toMatchObject({ version: 1, json, removed: null });
        expect(await cache.getRecord('call', 'call_2')).toBeUndefined();
        await cache.putEntity(entity('c2', 'lead_1'));
        await cache.putRecord({ ...row, ...filters, id: 'call_2', version: 1, json: '{}' });
        await cache.flush();
      });
      expect((await store.getEntity('conversation', 'c2'))?.parent).toBe('lead_1');
      expect((await store.getRecord('call', 'call_2'))?.version).toBe(1);
    } finally {
      await store.close();
    }
  });
});
