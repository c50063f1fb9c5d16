import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQLITE } from '../../src/store/sql/dialect.js';
import { statementsFor } from '../../src/store/sql/statements.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { type FeedWorld, feedWorld, newLead, OTHER_TEAM, T0, TEAM } from '../feed/feed-world.js';
import { describeEachBackend } from '../support/backends.js';
import { openSqliteFile } from '../support/sqlite-file.js';

// Store.searchLeads (POST /v1/leads/search): live leads of one team whose email or phone is the one asked,
// oldest first, after a position. With both criteria a lead matching either is returned, once.

const ids = async (store: Store, q: { email?: string; phone?: string; after?: number; limit?: number }) =>
  (await store.searchLeads({ team: TEAM, after: 0, limit: 100, ...q })).map((row) => JSON.parse(row.json).id);

describeEachBackend('Lead search in the store', (makeStore) => {
  let w: FeedWorld;
  beforeAll(async () => {
    w = await feedWorld(makeStore);
    const people: [string, string | undefined, string | undefined][] = [
      ['lead_S1', 'ana@example.com', '+4930901820'],
      ['lead_S2', 'bo@example.com', '+4930901821'],
      ['lead_S3', 'ana@example.com', undefined],
      ['lead_S4', undefined, '+4930901820'],
      ['lead_S5', 'bo@example.com', '+4930901820'],
      ['lead_S6', 'ANA@example.com ', undefined],
    ];
    for (const [lead, email, phone] of people) {
      await w.apply(newLead(lead, { ...(email ? { email } : {}), ...(phone ? { phone } : {}) }));
    }
    // The same person in another team, and a lead that leaves the API data: neither is found.
    await w.apply(newLead('lead_X1', { team: OTHER_TEAM, email: 'ana@example.com', phone: '+4930901820' }));
    await w.apply({ type: 'lead.deleted', at: T0, lead: 'lead_S3' });
  });
  afterAll(async () => w.store.close());

  it('finds the live leads of the team by email or by phone, oldest first', async () => {
    expect(await ids(w.store, { email: 'ana@example.com' })).toEqual(['lead_S1', 'lead_S6']);
    expect(await ids(w.store, { phone: '+4930901820' })).toEqual(['lead_S1', 'lead_S4', 'lead_S5']);
    expect(await ids(w.store, { email: 'nobody@example.com', phone: '+4930000000' })).toEqual([]);
  });

  it('with both email and phone, a lead matching either is returned once, oldest first', async () => {
    expect(await ids(w.store, { email: 'ana@example.com', phone: '+4930901820' })).toEqual([
      'lead_S1',
      'lead_S4',
      'lead_S5',
      'lead_S6',
    ]);
  });

  it('pages by position: after and limit cut the merged matches', async () => {
    const all = await w.store.searchLeads({
      team: TEAM,
      email: 'ana@example.com',
      phone: '+4930901820',
      after: 0,
      limit: 2,
    });
    expect(all.map((row) => JSON.parse(row.json).id)).toEqual(['lead_S1', 'lead_S4']);
    const after = (all[1] as { seq: number }).seq;
    expect(await ids(w.store, { email: 'ana@example.com', phone: '+4930901820', after, limit: 2 })).toEqual([
      'lead_S5',
      'lead_S6',
    ]);
  });
});

describe('Lead search on SQLite reads the email and phone indexes', () => {
  let store: SqliteStore;
  beforeAll(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
  });
  afterAll(async () => store.close());

  it('each criterion is a lookup in its index, not a walk of every lead of the team', () => {
    const db = openSqliteFile(store.path, { readonly: true });
    const search = statementsFor(SQLITE).searchLeads;
    try {
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN ${statementsFor(SQLITE).searchLeads.text}`)
        .all(...search.values({ team: TEAM, email: 'a@b.c', phone: '+4930901820', after: 0, limit: 25 }))
        .map((row) => (row as { detail: string }).detail);
      expect(plan.some((step) => step.includes('USING INDEX records_email (team=? AND email=?'))).toBe(true);
      expect(plan.some((step) => step.includes('USING INDEX records_phone (team=? AND phone=?'))).toBe(true);
      expect(plan.filter((step) => step.includes('records_team'))).toEqual([]);
      // The matches are read by the records' key, not found by walking the table.
      expect(plan.filter((step) => step.startsWith('SCAN records'))).toEqual([]);
    } finally {
      db.close();
    }
  });
});
