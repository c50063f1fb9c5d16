import { afterAll, beforeAll, expect, it } from 'vitest';
import { joinedInOrder } from '../../src/store/sql/rows.js';
import type { ListFilter, RecordRow, Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { withFirstPageOutOfOrder } from '../support/joined-order.js';

// The joined reads (listPage, leadDetail) against the per-row reads they replace on the routes: the same
// bytes, the same page boundaries, on every backend.

const NAMES = ['Ada', 'Zoë', 'Łukasz', '李雷', 'Renée 🚀', 'O"Brien\\'];

function record(kind: RecordRow['kind'], id: string, team: string, extra: Partial<RecordRow> = {}): RecordRow {
  return {
    kind,
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
    json: JSON.stringify({ id, object: kind, name: NAMES[id.length % NAMES.length] }),
    ...extra,
  };
}

describeEachBackend('Joined reads', (makeStore) => {
  let store: Store;
  beforeAll(async () => {
    store = await makeStore();
    // 70 leads over two teams and two boards, some rewritten in place (a new version keeps its position),
    // some removed; calls of two leads.
    await store.write(async (tx) => {
      for (let i = 0; i < 70; i++) {
        const extra: Partial<RecordRow> = { board: i % 3 === 0 ? 'brd_1' : 'brd_2', status: i % 2 ? 'new' : 'lost' };
        await tx.putRecord(record('lead', `lead_${i}`, i % 7 === 0 ? 'team_u' : 'team_t', extra));
      }
      for (let i = 0; i < 12; i++) {
        await tx.putRecord(record('call', `call_${i}`, 'team_t', { lead: i % 2 ? 'lead_1' : 'lead_2' }));
      }
    });
    await store.write(async (tx) => {
      for (let i = 0; i < 70; i += 5) {
        const json = JSON.stringify({ id: `lead_${i}`, object: 'lead', name: 'Ünïcödé', version: 2 });
        await tx.putRecord(record('lead', `lead_${i}`, i % 7 === 0 ? 'team_u' : 'team_t', { version: 2, json }));
      }
      for (let i = 3; i < 70; i += 11) {
        await tx.removeRecord('lead', `lead_${i}`, 'deleted', 3, '2026-01-02T00:00:00.000Z');
      }
    });
  });
  afterAll(() => store.close());

  const cases: { kind: RecordRow['kind']; filter?: ListFilter }[] = [
    { kind: 'lead' },
    { kind: 'lead', filter: { by: 'board', value: 'brd_1' } },
    { kind: 'lead', filter: { by: 'status', value: 'lost' } },
    { kind: 'lead', filter: { by: 'stage', value: 'stg_none' } },
    { kind: 'call', filter: { by: 'lead', value: 'lead_1' } },
  ];

  it('every page of listPage holds the bytes of the per-row page, whether another follows, and its last position', async () => {
    for (const team of ['team_t', 'team_u', 'team_none']) {
      for (const { kind, filter } of cases) {
        for (const limit of [1, 4, 9, 100]) {
          let after = 0;
          for (let pages = 0; ; pages++) {
            const query = { team, kind, ...(filter ? { filter } : {}), after, limit };
            const rows = await store.listRecords({ ...query, limit: limit + 1 });
            const page = await store.listPage(query);
            const kept = rows.slice(0, limit);
            const last = kept[kept.length - 1];
            expect(page.items.toString('utf8')).toBe(kept.map((r) => r.json).join(','));
            expect(page.count).toBe(kept.length);
            expect(page.hasMore).toBe(rows.length > limit);
            expect(page.last).toEqual(last ? { seq: last.seq, id: JSON.parse(last.json).id } : null);
            if (!page.hasMore || !page.last) break;
            after = page.last.seq;
            expect(pages).toBeLessThan(100);
          }
        }
      }
    }
  });

  it('a page lists its records in keyset order, rewritten records at their first position', async () => {
    const page = await store.listPage({ team: 'team_t', kind: 'lead', after: 0, limit: 100 });
    const ids = (JSON.parse(`[${page.items.toString('utf8')}]`) as { id: string }[]).map((r) => r.id);
    const expected = Array.from({ length: 70 }, (_, i) => i)
      .filter((i) => i % 7 !== 0 && (i - 3) % 11 !== 0)
      .map((i) => `lead_${i}`);
    expect(ids).toEqual(expected);
  });

  it('a page the database joined out of position order is read again sorted: the same bytes as an ordered page', async () => {
    const query = { team: 'team_t', kind: 'lead' as const, after: 0, limit: 30 };
    const expected = await store.listPage(query);
    // The reported order no longer ascends, so the store must not trust the joined bytes.
    const { value: page, texts } = await withFirstPageOutOfOrder(store, () => store.listPage(query));
    expect(page.items.toString('utf8')).toBe(expected.items.toString('utf8'));
    expect(page.count).toBe(expected.count);
    expect(texts).toHaveLength(2);
    expect(texts[1]).toMatch(/ORDER BY seq\)/);
  });

  it('the order check reads the positions a page was joined in: ascending is in order, any step back is not', () => {
    expect(joinedInOrder({ joined_order: '1,2,10,11' })).toBe(true);
    expect(joinedInOrder({ joined_order: '7' })).toBe(true);
    expect(joinedInOrder({ joined_order: null })).toBe(true);
    expect(joinedInOrder(undefined)).toBe(true);
    expect(joinedInOrder({ joined_order: '1,10,2' })).toBe(false);
    expect(joinedInOrder({ joined_order: '5,5' })).toBe(false);
  });

  it('leadDetail is the lead with its facets spliced in, null for a missing or removed facet', async () => {
    const json = (id: string, extra: string) => `{"id":"${id}","object":"lead","name":"Zoë 🚀"${extra}}`;
    await store.write(async (tx) => {
      for (const id of ['lead_d1', 'lead_d2', 'lead_d3', 'lead_d4']) {
        await tx.putRecord(record('lead', id, 'team_t', { json: json(id, '') }));
      }
      await tx.putRecord(record('lead_attribution', 'lead_d1', 'team_t', { json: '{"object":"lead_attribution"}' }));
      await tx.putRecord(record('lead_response', 'lead_d1', 'team_t', { json: '{"object":"lead_response","n":"ü"}' }));
      await tx.putRecord(record('lead_response', 'lead_d2', 'team_t', { json: '{"object":"lead_response"}' }));
      await tx.putRecord(record('lead_attribution', 'lead_d3', 'team_t', { json: '{"object":"lead_attribution"}' }));
      await tx.removeRecord('lead_attribution', 'lead_d3', 'deleted', 2, '2026-01-02T00:00:00.000Z');
      await tx.removeRecord('lead', 'lead_d4', 'erased', 2, '2026-01-02T00:00:00.000Z');
    });
    const body = async (id: string) => (await store.leadDetail(id))?.body;
    expect(await store.leadDetail('lead_d1')).toMatchObject({ team: 'team_t' });
    expect(await body('lead_d1')).toBe(
      json('lead_d1', ',"attribution":{"object":"lead_attribution"},"response":{"object":"lead_response","n":"ü"}'),
    );
    expect(await body('lead_d2')).toBe(json('lead_d2', ',"attribution":null,"response":{"object":"lead_response"}'));
    expect(await body('lead_d3')).toBe(json('lead_d3', ',"attribution":null,"response":null'));
    expect(await store.leadDetail('lead_d4')).toBeUndefined();
    expect(await store.leadDetail('lead_nope')).toBeUndefined();
  });
});
