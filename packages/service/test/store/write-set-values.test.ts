import { afterEach, expect, it } from 'vitest';
import type { Entity, FeedRow, RecordRow, Store, WriteSet } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';

// `applyWrites` writes many rows per statement (on PostgreSQL the rows travel as one JSON document):
// whatever a value holds, it reads back exactly as it was written.

const TEAM = 'team_W1';
const AWKWARD = 'quote " backslash \\ slash / tab \t newline \n nul-free \u0001 é 日本 😀 \\u00e9 {"x":[1,2]}';

const emptySet = (): WriteSet => ({
  deleteEntities: [],
  putEntities: [],
  putRecords: [],
  supersede: [],
  removeRecords: [],
  purgeFeed: [],
  appendFeed: [],
});

describeEachBackend('multi-row writes', (makeStore, backend) => {
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  it('entity states, record columns and feed bodies read back byte for byte, whatever characters they hold', async () => {
    store = await makeStore();
    const entities: Entity<unknown>[] = [
      { kind: 'lead', id: 'lead_1', team: TEAM, parent: null, state: { note: AWKWARD, n: 1.5, list: [AWKWARD, null] } },
      { kind: 'lead', id: 'lead_2', team: TEAM, parent: 'lead_1', state: [AWKWARD, { a: '' }] },
      { kind: 'lead', id: 'lead_3', team: TEAM, parent: null, state: AWKWARD },
      { kind: 'lead', id: 'lead_4', team: TEAM, parent: null, state: 42 },
      { kind: 'lead', id: 'lead_5', team: TEAM, parent: null, state: null },
    ];
    const json = JSON.stringify({ id: 'lead_1', name: AWKWARD });
    const records: RecordRow[] = [
      {
        kind: 'lead',
        id: 'lead_1',
        team: TEAM,
        lead: null,
        board: 'board "1"',
        stage: AWKWARD,
        status: null,
        email: 'a"b@example.com',
        phone: null,
        version: 3,
        updatedAt: '2026-01-10T10:00:00.000Z',
        json,
      },
      {
        kind: 'call',
        id: 'call_1',
        team: TEAM,
        lead: 'lead_1',
        board: null,
        stage: null,
        status: null,
        email: null,
        phone: '+4915112345678',
        version: 1,
        updatedAt: '2026-01-10T10:00:01.000Z',
        json: AWKWARD,
      },
    ];
    const feed: FeedRow[] = [
      {
        team: TEAM,
        pos: 1,
        kind: 'lead',
        id: 'lead_1',
        version: 2,
        recordedAt: 1_798_761_600_123,
        body: AWKWARD,
        removed: null,
      },
      {
        team: TEAM,
        pos: 2,
        kind: 'call',
        id: 'call_9',
        version: 4,
        recordedAt: 1_798_761_600_124,
        body: null,
        removed: 'erased',
      },
    ];
    await store.write(async (tx) => {
      await tx.lockFeedHead(TEAM);
      await tx.applyWrites({ ...emptySet(), putEntities: entities, putRecords: records, appendFeed: feed });
    });

    const read = await store.write(async (tx) => Promise.all(entities.map((e) => tx.getEntity(e.kind, e.id))));
    expect(read).toEqual(entities);
    const lead = await store.getRecord('lead', 'lead_1');
    expect(lead).toMatchObject({ team: TEAM, version: 3, json, removed: null });
    expect((await store.getRecord('call', 'call_1'))?.json).toBe(AWKWARD);
    expect(await store.searchLeads({ team: TEAM, email: 'a"b@example.com', after: 0, limit: 10 })).toHaveLength(1);
    expect(await store.readFeed(TEAM, 0, 10)).toEqual(feed);
    expect(await store.feedHead(TEAM)).toBe(2);
  });

  it('a lone surrogate or a NUL in a state keeps its JSON escape; on PostgreSQL a lone surrogate in a plain column is stored as U+FFFD, as a string parameter sends it', async () => {
    store = await makeStore();
    const state = { name: 'x\ud800y', note: 'nul \u0000 here', pair: '\ud83d\ude00', low: '\udc00' };
    const lead = {
      kind: 'lead' as const,
      id: 'lead_s',
      team: TEAM,
      lead: null,
      board: null,
      stage: null,
      status: null,
      email: 'odd\udc00@example.com',
      phone: null,
      version: 1,
      updatedAt: '2026-01-10T10:00:00.000Z',
      json: JSON.stringify(state),
    };
    await store.write(async (tx) => {
      await tx.lockFeedHead(TEAM);
      await tx.applyWrites({
        ...emptySet(),
        putEntities: [{ kind: 'lead', id: 'lead_s', team: TEAM, parent: null, state }],
        putRecords: [lead],
        appendFeed: [
          { team: TEAM, pos: 1, kind: 'lead', id: 'lead_t', version: 1, recordedAt: 1, body: 'b\ud800', removed: null },
        ],
      });
    });
    expect((await store.write((tx) => tx.getEntity('lead', 'lead_s')))?.state).toEqual(state);
    expect((await store.getRecord('lead', 'lead_s'))?.json).toBe(lead.json);
    // SQLite keeps what its driver makes of such a string; PostgreSQL's single-row writes send UTF-8.
    if (backend !== 'postgres') return;
    expect(await store.searchLeads({ team: TEAM, email: 'odd\ufffd@example.com', after: 0, limit: 10 })).toHaveLength(
      1,
    );
    expect((await store.readFeed(TEAM, 0, 10))[0]?.body).toBe('b\ufffd');
  });

  it('a value holding the marks that separate values on PostgreSQL, or an empty string, reads back as written', async () => {
    store = await makeStore();
    const row = (id: string, email: string | null, board: string | null): RecordRow => ({
      kind: 'lead',
      id,
      team: TEAM,
      lead: null,
      board,
      stage: null,
      status: null,
      email,
      phone: null,
      version: 1,
      updatedAt: '2026-01-10T10:00:00.000Z',
      json: JSON.stringify({ id, email }),
    });
    // One row alone with an empty string; then rows whose plain columns hold the marks.
    await store.write(async (tx) => tx.applyWrites({ ...emptySet(), putRecords: [row('lead_e', '', '')] }));
    const marked = [row('lead_m', 'a\u001fb@example.com', '\u001e'), row('lead_n', null, 'x\u001ey')];
    await store.write(async (tx) => tx.applyWrites({ ...emptySet(), putRecords: marked }));
    for (const r of [row('lead_e', '', ''), ...marked]) {
      expect((await store.getRecord('lead', r.id))?.json).toBe(r.json);
      if (r.email === null) continue;
      const found = await store.searchLeads({ team: TEAM, email: r.email, after: 0, limit: 10 });
      expect(found.map((p) => p.json)).toEqual([r.json]);
    }
    const page = await store.listRecords({
      team: TEAM,
      kind: 'lead',
      filter: { by: 'board', value: '\u001e' },
      after: 0,
      limit: 10,
    });
    expect(page.map((p) => p.json)).toEqual([marked[0]?.json]);
  });

  it('rows of one write set keep their order: new records get keyset positions in the order they are written', async () => {
    store = await makeStore();
    const row = (id: string): RecordRow => ({
      kind: 'lead',
      id,
      team: TEAM,
      lead: null,
      board: null,
      stage: null,
      status: null,
      email: null,
      phone: null,
      version: 1,
      updatedAt: '2026-01-10T10:00:00.000Z',
      json: JSON.stringify({ id }),
    });
    const ids = Array.from({ length: 50 }, (_, i) => `lead_${(i * 37) % 50}`);
    await store.write(async (tx) => tx.applyWrites({ ...emptySet(), putRecords: ids.map(row) }));
    const stored = await Promise.all(ids.map((id) => store!.getRecord('lead', id)));
    const seqs = stored.map((r) => r!.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
  });
});
