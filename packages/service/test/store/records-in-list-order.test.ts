import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { runDemo } from '../../src/demo/run-demo.js';
import type { RecordKind } from '../../src/schemas/enums.js';
import { SQLITE } from '../../src/store/sql/dialect.js';
import { statementsFor } from '../../src/store/sql/statements.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { Crm } from '../../src/write/events/crm.js';
import { BACKENDS } from '../support/backends.js';
import { openSqliteFile } from '../support/sqlite-file.js';
import { type StoreAtMigration, storeAtMigration } from '../support/store-at-migration.js';

// Records in list order (migration 0011). On SQLite the records table is keyed by (team, kind, seq), so a
// page is one range of that key; a new record takes its position from a counter, never one given before.
// PostgreSQL's table does not change: the same upgrade test runs there to show every read finds the same.

const BEFORE = '0010_parent_index_without_orphans';
const AT = '2026-11-02T00:00:00.000Z';
const KINDS: RecordKind[] = [
  'lead',
  'lead_attribution',
  'lead_response',
  'activity',
  'call',
  'conversation',
  'booking',
  'board',
];

/** Every page of a kind, 7 records a page: positions and JSON in order. */
async function walk(store: Store, team: string, kind: RecordKind): Promise<string[]> {
  const out: string[] = [];
  let after = 0;
  for (;;) {
    const page = await store.listPage({ team, kind, after, limit: 7 });
    if (page.count > 0) out.push(`${page.last?.seq} ${page.items.toString('utf8')}`);
    if (!page.hasMore || !page.last) return out;
    after = page.last.seq;
  }
}

for (const backend of BACKENDS) {
  const open = storeAtMigration[backend];
  const suite = open ? describe : describe.skip;
  const skipped = open ? '' : ' (skipped: PostgreSQL is not enabled: set PG_URL)';
  suite(`records in list order [${backend}]${skipped}`, () => {
    const opened: StoreAtMigration[] = [];
    afterEach(async () => {
      for (const db of opened.splice(0)) await db.close();
    });

    it('migration 0011 upgrades a database in place: every page, lead and search finds the same; a new record comes after every earlier one', async () => {
      const db = await (open as (upTo: string) => Promise<StoreAtMigration>)(BEFORE);
      opened.push(db);
      const { store } = db;
      const { teams } = await runDemo(store, {
        seed: 11,
        teams: 2,
        leads: 15,
        now: Date.parse('2026-11-01T00:00:00Z'),
      });
      const [team, other] = teams as [string, string];
      const crm = new Crm(store, new ManualClock(Date.parse(AT)));
      const [first] = await store.listRecords({ team, kind: 'lead', after: 0, limit: 1 });
      const lead = JSON.parse(first?.json as string) as { id: string; email?: string };
      // A removed lead among the live ones: lists skip it before and after.
      const [, second] = await store.listRecords({ team, kind: 'lead', after: 0, limit: 2 });
      await crm.applyBatch([
        { type: 'lead.deleted', at: AT, lead: (JSON.parse(second?.json as string) as { id: string }).id },
      ]);

      const reads = async () => ({
        pages: await Promise.all(teams.flatMap((t) => KINDS.map((kind) => walk(store, t, kind)))),
        lead: await store.leadDetail(lead.id),
        search: lead.email ? await store.searchLeads({ team, email: lead.email, after: 0, limit: 10 }) : [],
        foreign: await walk(store, other, 'lead'),
      });
      const before = await reads();
      expect(before.pages.flat().length).toBeGreaterThan(10);
      expect(before.lead).toBeDefined();
      const maxSeq = async () => {
        const rows = await db.query('SELECT max(seq) AS seq FROM records');
        return Number(rows[0]?.seq);
      };
      const lastBefore = await maxSeq();

      await store.migrate();
      expect(await store.pendingMigrations()).toEqual([]);
      expect(await reads()).toEqual(before);

      await crm.applyBatch([{ type: 'lead.created', at: AT, lead: 'lead_AfterUpgrade', team, status: 'new' }]);
      const [added] = await db.query(`SELECT seq FROM records WHERE kind = 'lead' AND id = 'lead_AfterUpgrade'`);
      expect(Number(added?.seq)).toBeGreaterThan(lastBefore);
      const page = await walk(store, team, 'lead');
      expect(page.at(-1)).toContain('"id":"lead_AfterUpgrade"');
      // An update keeps the record's position.
      await crm.applyBatch([{ type: 'lead.updated', at: AT, lead: lead.id, name: 'Renamed' }]);
      const [moved] = await db.query(`SELECT seq FROM records WHERE kind = 'lead' AND id = '${lead.id}'`);
      const seqs = before.pages[0]?.map((p) => Number(p.split(' ')[0])) ?? [];
      expect(Number(moved?.seq)).toBeLessThanOrEqual(seqs[0] ?? 0);
    });
  });
}

describe('Pages on SQLite read the records key', () => {
  let store: SqliteStore;
  beforeAll(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
  });
  afterAll(async () => store.close());

  it('a page of a kind, and whether more follow, are one range of the records key (team, kind, seq)', () => {
    const db = openSqliteFile(store.path, { readonly: true });
    try {
      const statement = statementsFor(SQLITE).listPage.none;
      const values = statement.values({ team: 't', kind: 'lead', after: 0, limit: 100 });
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN ${statement.text}`)
        .all(...values)
        .map((row) => (row as { detail: string }).detail)
        .filter((step) => step.startsWith('SEARCH') || step.startsWith('SCAN records'));
      const range = 'SEARCH records USING PRIMARY KEY (team=? AND kind=? AND seq>?)';
      expect(plan).toEqual([range, range]);
    } finally {
      db.close();
    }
  });
});
