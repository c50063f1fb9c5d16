import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { runDemo } from '../../src/demo/run-demo.js';
import type { RecordKind } from '../../src/schemas/enums.js';
import { SQLITE } from '../../src/store/sql/dialect.js';
import { statementsFor } from '../../src/store/sql/statements.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ANY_AGE, type ListFilter, type Store } from '../../src/store/store.js';
import { Crm } from '../../src/write/events/crm.js';
import { BACKENDS } from '../support/backends.js';
import { openSqliteFile } from '../support/sqlite-file.js';
import { type StoreAtMigration, storeAtMigration } from '../support/store-at-migration.js';
import { walkPages } from '../support/walk-pages.js';

// Smaller indexes, each statement still a lookup in one. The lead, board and stage indexes hold no team
// (migration 0009): a list filtered by one of them reads the same pages as before, still only the asked
// team's rows. The parent index holds only entities with a parent (0010): retention, purges and lookups by
// parent find what they found before.

const BEFORE = '0008_request_log';
const INDEXES = ['lead', 'board', 'stage'] as const;
const DEFINED = ['records_lead', 'records_board', 'records_stage', 'feed_record', 'entities_parent'] as const;
const AT = '2026-11-02T00:00:00.000Z';

/** The definitions of the indexes in `DEFINED`, by name, as the database prints them. */
async function definitions(backend: string, db: StoreAtMigration): Promise<Record<string, string>> {
  const rows =
    backend === 'sqlite'
      ? await db.query("SELECT name, sql AS def FROM sqlite_master WHERE type = 'index'")
      : await db.query('SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE schemaname = current_schema()');
  return Object.fromEntries(DEFINED.map((name) => [name, String(rows.find((r) => r.name === name)?.def ?? '')]));
}

/** Every page of a filtered list, 3 records a page: the records' JSON in order. */
const walk = async (store: Store, team: string, kind: RecordKind, filter: ListFilter) =>
  (await walkPages(store, { team, kind, filter }, 3)).map((page) => page.json);

for (const backend of BACKENDS) {
  const open = storeAtMigration[backend];
  const suite = open ? describe : describe.skip;
  const skipped = open ? '' : ' (skipped: PostgreSQL is not enabled: set PG_URL)';
  suite(`filter indexes without the team [${backend}]${skipped}`, () => {
    const opened: StoreAtMigration[] = [];
    afterEach(async () => {
      for (const db of opened.splice(0)) await db.close();
    });

    it('migrations 0009 and 0010 upgrade a database in place: lists, lookups and retention find the same', async () => {
      const db = await (open as (upTo: string) => Promise<StoreAtMigration>)(BEFORE);
      opened.push(db);
      const { store } = db;
      const { teams } = await runDemo(store, { seed: 7, teams: 2, leads: 12, now: Date.parse('2026-11-01T00:00:00Z') });
      const [team, other] = teams as [string, string];
      const leadOf = async (t: string) => {
        const [first] = await store.listRecords({ team: t, kind: 'lead', after: 0, limit: 1 });
        return JSON.parse(first?.json as string) as { id: string; board: string; stage: string };
      };
      const lead = await leadOf(team);
      const foreign = await leadOf(other);
      const lists = async () => ({
        activities: await walk(store, team, 'activity', { by: 'lead', value: lead.id }),
        board: await walk(store, team, 'lead', { by: 'board', value: lead.board }),
        stage: await walk(store, team, 'lead', { by: 'stage', value: lead.stage }),
        foreign: await walk(store, team, 'activity', { by: 'lead', value: foreign.id }),
      });
      const children = async () => {
        const out: string[] = [];
        for (const page of await store.listRecords({ team, kind: 'lead', after: 0, limit: 100 })) {
          const parent = (JSON.parse(page.json) as { id: string }).id;
          for (const kind of ['call', 'conversation', 'booking', 'submission'] as const) {
            for (const e of await store.findEntities(kind, { parent })) out.push(`${parent} ${kind} ${e.id}`);
          }
        }
        return out;
      };
      const before = await lists();
      const beforeChildren = await children();
      expect(before.activities.length).toBeGreaterThan(0);
      expect(before.board.length).toBeGreaterThan(1);
      expect(before.foreign).toEqual([]);
      expect(beforeChildren.length).toBeGreaterThan(5);
      const old = await definitions(backend, db);
      expect(INDEXES.every((c) => old[`records_${c}`]?.includes('team'))).toBe(true);

      await store.migrate();
      expect(await store.pendingMigrations()).toEqual([]);
      expect(await lists()).toEqual(before);
      expect(await children()).toEqual(beforeChildren);
      const now = await definitions(backend, db);
      for (const column of INDEXES) {
        expect(now[`records_${column}`]).toMatch(new RegExp(`\\(kind, ${column}, seq\\)`));
        expect(now[`records_${column}`]).not.toContain('team');
      }
      expect(now.feed_record).toMatch(/\(kind, id, pos\)/);
      expect(now.entities_parent).toMatch(/WHERE \(?parent IS NOT NULL\)?/);

      // Retention and purges go on finding a record's entries: two new versions of a lead, the older ones
      // trimmed as superseded; the other team's lead erased, its entries purged but its removal.
      const crm = new Crm(store, new ManualClock(Date.parse(AT)));
      const entries = async (t: string, id: string) =>
        (await store.readFeed(t, 0, 10_000)).filter((e) => e.id === id && e.kind === 'lead');
      await crm.applyBatch([{ type: 'lead.updated', at: AT, lead: lead.id, name: 'Renamed' }]);
      await crm.applyBatch([{ type: 'lead.updated', at: AT, lead: lead.id, name: 'Renamed again' }]);
      expect((await entries(team, lead.id)).length).toBeGreaterThan(1);
      await store.trimFeed(null, ANY_AGE);
      expect((await entries(team, lead.id)).map((e) => e.version)).toEqual([
        Math.max(...(await entries(team, lead.id)).map((e) => e.version)),
      ]);
      await crm.applyBatch([{ type: 'lead.erased', at: AT, lead: foreign.id }]);
      expect((await entries(other, foreign.id)).map((e) => e.removed)).toEqual(['erased']);
    });
  });
}

describe('Lists on SQLite read their index', () => {
  let store: SqliteStore;
  beforeAll(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
  });
  afterAll(async () => store.close());

  it('a page by lead, board or stage, and whether more follow, are lookups in that column index', () => {
    const db = openSqliteFile(store.path, { readonly: true });
    try {
      for (const column of INDEXES) {
        const statement = statementsFor(SQLITE).listPage[column];
        const values = statement.values({ team: 't', kind: 'lead', value: 'x', after: 0, limit: 25 });
        const plan = db
          .prepare(`EXPLAIN QUERY PLAN ${statement.text}`)
          .all(...values)
          .map((row) => (row as { detail: string }).detail)
          .filter((step) => step.startsWith('SEARCH') || step.startsWith('SCAN records'));
        const lookup = `SEARCH records USING INDEX records_${column} (kind=? AND ${column}=? AND seq>?)`;
        expect(plan).toEqual([lookup, lookup]);
      }
    } finally {
      db.close();
    }
  });

  it('a page of a kind, and whether more follow, are one range of the records key (team, kind, seq)', () => {
    const db = openSqliteFile(store.path, { readonly: true });
    try {
      const statement = statementsFor(SQLITE).listPage.none;
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN ${statement.text}`)
        .all(...statement.values({ team: 't', kind: 'lead', after: 0, limit: 100 }))
        .map((row) => (row as { detail: string }).detail)
        .filter((step) => step.startsWith('SEARCH') || step.startsWith('SCAN records'));
      const range = 'SEARCH records USING PRIMARY KEY (team=? AND kind=? AND seq>?)';
      expect(plan).toEqual([range, range]);
    } finally {
      db.close();
    }
  });

  it('retention, purges and lookups by parent are lookups in feed_record and entities_parent', () => {
    const db = openSqliteFile(store.path, { readonly: true });
    const sql = statementsFor(SQLITE);
    const plan = (text: string, values: unknown[]) =>
      db
        .prepare(`EXPLAIN QUERY PLAN ${text}`)
        .all(...values)
        .map((row) => (row as { detail: string }).detail);
    try {
      const window = { afterRowid: 0, endRowid: 10, afterPos: 0, endPos: 10, team: 't', cutoff: 1 };
      for (const s of [sql.trimSuperseded, sql.trimSupersededTeam]) {
        expect(plan(s.text, s.values(window))).toContain(
          'SEARCH newer USING INDEX feed_record (kind=? AND id=? AND pos>?)',
        );
      }
      expect(plan(sql.purgeFeed, ['lead', 'lead_1'])).toEqual([
        'SEARCH feed USING INDEX feed_record (kind=? AND id=?)',
      ]);
      const keep = sql.keepSupersededBody;
      expect(plan(keep.text, keep.values({ kind: 'lead', id: 'lead_1' }))).toContain(
        'SEARCH feed USING INDEX feed_record (kind=? AND id=?)',
      );
      for (const by of ['parent', 'both'] as const) {
        const values = by === 'parent' ? ['call', 'lead_1'] : ['call', 't', 'lead_1'];
        expect(plan(sql.entities[by], values)).toEqual([
          'SEARCH entities USING INDEX entities_parent (kind=? AND parent=?)',
        ]);
      }
    } finally {
      db.close();
    }
  });
});
