import { afterAll, beforeAll, expect, it } from 'vitest';
import { STORIES } from '../../src/demo/demo-stories.js';
import { runDemo } from '../../src/demo/run-demo.js';
import { RECORD_KINDS, type RecordKind } from '../../src/schemas/enums.js';
import type { Store } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';
import { shapeProblem } from '../support/record-shape.js';

// The projections are typed from the record schemas, but the stored JSON is what the API serves: this reads
// back everything a small demo stored, every record of every kind and every feed body, and checks each
// against its schema and key order.

const PAGE = 500;
// Every story of the demo at least once in each team.
const LEADS = STORIES.length + 4;

/** Every live record of a kind in a team, through the store's keyset pages. */
async function storedJson(store: Store, team: string, kind: RecordKind): Promise<string[]> {
  const out: string[] = [];
  for (let after = 0; ; ) {
    const rows = await store.listRecords({ team, kind, after, limit: PAGE });
    out.push(...rows.map((row) => row.json));
    if (rows.length < PAGE) return out;
    after = rows[rows.length - 1]!.seq;
  }
}

describeEachBackend('demo data: every stored record has its schema shape', (makeStore) => {
  let store: Store;
  let teams: string[];
  const counts = new Map<RecordKind, number>();
  const problems: string[] = [];
  let feedBodies = 0;

  beforeAll(async () => {
    store = await makeStore();
    // Superseded feed entries kept, so every version the write side produced is read back.
    await runDemo(store, {
      seed: 7,
      teams: 2,
      leads: LEADS,
      now: Date.parse('2026-03-01T00:00:00.000Z'),
      compactFeed: false,
    });
    teams = (await store.findEntities('team', {})).map((t) => t.id);
    for (const team of teams) {
      for (const kind of RECORD_KINDS) {
        for (const json of await storedJson(store, team, kind)) {
          counts.set(kind, (counts.get(kind) ?? 0) + 1);
          const record = JSON.parse(json) as { id?: unknown };
          const problem = shapeProblem(kind, record);
          if (problem) problems.push(`record ${kind} ${String(record.id)} ${problem}`);
        }
      }
      for (let after = 0; ; ) {
        const rows = await store.readFeed(team, after, PAGE);
        for (const row of rows) {
          if (row.body === null) continue;
          feedBodies += 1;
          const problem = shapeProblem(row.kind, JSON.parse(row.body));
          if (problem) problems.push(`feed ${team}#${row.pos} ${row.kind} ${row.id} ${problem}`);
        }
        if (rows.length < PAGE) break;
        after = rows[rows.length - 1]!.pos;
      }
    }
  });

  afterAll(async () => {
    await store?.close();
  });

  it('the demo stored records of every kind in its teams', () => {
    expect(teams.length).toBeGreaterThanOrEqual(2);
    expect(RECORD_KINDS.filter((kind) => !counts.get(kind))).toEqual([]);
    expect(feedBodies).toBeGreaterThan(0);
  });

  it('every stored record and every feed body matches its kind schema, keys in the schema order', () => {
    expect(problems).toEqual([]);
  });
});
