import { expect, it } from 'vitest';
import type { Entity } from '../../src/store/store.js';
import { CachedTx } from '../../src/write/cached-tx.js';
import { describeEachBackend } from '../support/backends.js';

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
        const cache = new CachedTx(tx, true);
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

  it('a changed entity is only what was written: mutating what was read or written changes nothing', async () => {
    const store = await makeStore();
    try {
      await store.write(async (tx) => {
        const cache = new CachedTx(tx, true);
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
        const cache = new CachedTx(tx, true);
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
});
