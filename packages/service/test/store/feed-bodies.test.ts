import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import type { FeedRow, RecordRow } from '../../src/store/store.js';
import { Crm } from '../../src/write/events/crm.js';
import type { CrmEvent } from '../../src/write/events/events.js';
import { BACKENDS } from '../support/backends.js';
import { type StoreAtMigration, storeAtMigration } from '../support/store-at-migration.js';

// Each version's JSON is stored once: a feed entry of its record's current version borrows the record
// row's JSON, and gets a copy of its own only when the record moves on. Checked through the feed (every
// entry delivers its own version, before and after the record changes) and in the tables themselves,
// on a fresh database and on one upgraded in place by migration 0004. Migration 0005 drops the entities
// activities no longer have (a lead finds them from its counter): an upgraded database still removes them.

const T0 = '2026-01-10T10:00:00.000Z';
const TEAM = 'team_A1';

const LATEST = '0005_activities_without_entities';
const BEFORE = '0003_audit';

const setup: CrmEvent[] = [
  { type: 'organization.upsert', at: T0, organization: 'org_1', name: 'Acme', plan: 'api_included' },
  { type: 'team.upsert', at: T0, team: TEAM, organization: 'org_1', name: 'Sales' },
];
const created = (lead: string): CrmEvent => ({ type: 'lead.created', at: T0, team: TEAM, lead, status: 'new' });
const renamed = (lead: string, name: string): CrmEvent => ({ type: 'lead.updated', at: T0, lead, name });

/** Every entry's body is the record at the entry's own version. */
function expectOwnVersions(feed: FeedRow[]): void {
  for (const entry of feed) {
    if (entry.removed) continue;
    expect(entry.body, `${entry.kind} ${entry.id} v${entry.version}`).not.toBeNull();
    expect((JSON.parse(entry.body as string) as { version: number }).version).toBe(entry.version);
  }
}

for (const backend of BACKENDS) {
  const open = storeAtMigration[backend];
  const suite = open ? describe : describe.skip;
  const skipped = open ? '' : ' (skipped: PostgreSQL is not enabled: set PG_URL)';
  suite(`feed bodies stored once [${backend}]${skipped}`, () => {
    const opened: StoreAtMigration[] = [];
    const openAt = async (upTo: string) => {
      const db = await (open as (upTo: string) => Promise<StoreAtMigration>)(upTo);
      opened.push(db);
      return db;
    };
    afterEach(async () => {
      for (const db of opened.splice(0)) await db.close();
    });

    it('an entry of the current version borrows the record row; a superseded one keeps its own body', async () => {
      const { store, query } = await openAt(LATEST);
      const crm = new Crm(store, new ManualClock(Date.parse('2026-01-15T09:00:00.000Z')));
      await crm.applyBatch([...setup, created('lead_A'), created('lead_B'), renamed('lead_B', 'Bea')]);
      const first = await store.readFeed(TEAM, 0, 1000);
      expectOwnVersions(first);
      // A later batch moves lead_A on twice, and erases lead_B.
      await crm.applyBatch([
        renamed('lead_A', 'Ann'),
        renamed('lead_A', 'Anna'),
        { type: 'lead.erased', at: T0, lead: 'lead_B' },
      ]);
      const second = await store.readFeed(TEAM, 0, 1000);
      expectOwnVersions(second);
      // What was delivered before is delivered the same, byte for byte (unless a removal purged it).
      const now = new Map(second.map((e) => [e.pos, e]));
      for (const entry of first) {
        if (entry.id === 'lead_A') expect(now.get(entry.pos)).toEqual(entry);
        else if (now.has(entry.pos)) expect(now.get(entry.pos)).toEqual(entry);
      }
      const own = await query(
        `SELECT f.kind, f.id, f.version, f.body IS NOT NULL AS own, r.version AS current FROM feed f
         JOIN records r ON r.kind = f.kind AND r.id = f.id WHERE f.id = 'lead_A' AND f.kind = 'lead' ORDER BY f.pos`,
      );
      expect(own.map((r) => [Number(r.version), Boolean(r.own)])).toEqual([
        [1, true],
        [2, true],
        [3, false],
      ]);
      expect(own.every((r) => Number(r.current) === 3)).toBe(true);
      // Nothing of the erased lead remains in the feed but its removal entry.
      const erased = await query(`SELECT body, removed FROM feed WHERE id = 'lead_B' AND kind = 'lead'`);
      expect(erased).toEqual([{ body: null, removed: 'erased' }]);
    });

    it('migration 0004 upgrades a database in place: entries drop the copy of their record row, the feed reads the same', async () => {
      const { store, query } = await openAt(BEFORE);
      // The write path before 0004 stored every body in its entry: the plain WriteTx still does.
      const row = (id: string, version: number): RecordRow => ({
        kind: 'lead',
        id,
        team: TEAM,
        lead: null,
        board: null,
        stage: null,
        status: 'new',
        email: null,
        phone: null,
        version,
        updatedAt: T0,
        json: `{"id":"${id}","version":${version}}`,
      });
      await store.write(async (tx) => {
        for (const [id, versions] of [
          ['lead_A', 2],
          ['lead_B', 1],
        ] as const) {
          for (let version = 1; version <= versions; version++) {
            await tx.putRecord(row(id, version));
            const body = row(id, version).json;
            await tx.appendFeed({ team: TEAM, kind: 'lead', id, version, recordedAt: 1, body, removed: null });
          }
        }
      });
      const before = await store.readFeed(TEAM, 0, 100);
      expect((await query('SELECT count(*) AS n FROM feed WHERE body IS NOT NULL'))[0]?.n).toEqual(
        backend === 'postgres' ? '3' : 3,
      );
      await store.migrate();
      expect(await store.pendingMigrations()).toEqual([]);
      expect(await store.readFeed(TEAM, 0, 100)).toEqual(before);
      const own = await query(`SELECT id, version, body IS NOT NULL AS own FROM feed ORDER BY pos`);
      expect(own.map((r) => [r.id, Number(r.version), Boolean(r.own)])).toEqual([
        ['lead_A', 1, true],
        ['lead_A', 2, false],
        ['lead_B', 1, false],
      ]);
      // The upgraded database goes on as a new one does: a new version of lead_B gives its entry a copy.
      await store.write(async (tx) => tx.putRecord(row('lead_B', 2)));
      expect(await store.readFeed(TEAM, 0, 100)).toEqual(before);
      const after = await query(`SELECT id, version, body IS NOT NULL AS own FROM feed WHERE id = 'lead_B'`);
      expect(after.map((r) => [r.id, Number(r.version), Boolean(r.own)])).toEqual([['lead_B', 1, true]]);
    });

    it('migration 0005 upgrades a database in place: activity entities go, erasing a lead still removes its activities', async () => {
      const { store, query } = await openAt('0004_compact_storage');
      const crm = new Crm(store, new ManualClock(Date.parse('2026-01-15T09:00:00.000Z')));
      await crm.applyBatch([...setup, created('lead_A'), created('lead_B')]);
      const activities = async (lead: string) =>
        (await query(`SELECT id, removed FROM records WHERE kind = 'activity' AND lead = '${lead}' ORDER BY seq`)).map(
          (r) => [r.id, r.removed],
        );
      const ofA = (await activities('lead_A')).map(([id]) => id as string);
      expect(ofA.length).toBeGreaterThan(0);
      // The write path before 0005 kept an entity per activity under its lead.
      await store.write(async (tx) => {
        for (const id of ofA) {
          await tx.putEntity({ kind: 'activity', id, team: TEAM, parent: 'lead_A', state: { lead: 'lead_A' } });
        }
      });
      await store.migrate();
      expect(await store.pendingMigrations()).toEqual([]);
      expect(await query(`SELECT id FROM entities WHERE kind = 'activity'`)).toEqual([]);
      await crm.applyBatch([{ type: 'lead.erased', at: T0, lead: 'lead_A' }]);
      expect(await activities('lead_A')).toEqual(ofA.map((id) => [id, 'erased']));
      expect((await activities('lead_B')).every(([, removed]) => removed === null)).toBe(true);
    });
  });
}
