import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { runDemo } from '../../src/demo/run-demo.js';
import { FEED_KINDS, type RecordKind } from '../../src/schemas/enums.js';
import type { Store } from '../../src/store/store.js';
import { Crm } from '../../src/write/events/crm.js';
import { BACKENDS } from '../support/backends.js';
import { type StoreAtMigration, storeAtMigration } from '../support/store-at-migration.js';
import { walkPages } from '../support/walk-pages.js';

// Records in list order (migration 0011). On SQLite the records table is keyed by (team, kind, seq), so a
// page is one range of that key (its query plan is checked in smaller-indexes.test.ts); a new record takes
// its position from a counter, never one given before. On PostgreSQL the key becomes (team, kind, seq) too.

const BEFORE = '0010_parent_index_without_orphans';
const AT = '2026-11-02T00:00:00.000Z';

/** Every page of a kind, 7 records a page: positions and JSON in order. */
const walk = async (store: Store, team: string, kind: RecordKind) =>
  (await walkPages(store, { team, kind }, 7)).map((page) => `${page.last} ${page.json}`);

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
        pages: await Promise.all(teams.flatMap((t) => FEED_KINDS.map((kind) => walk(store, t, kind)))),
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
