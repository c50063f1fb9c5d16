import { expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { compactUnreadFeeds } from '../../src/demo/demo-feed-compaction.js';
import { runDemo } from '../../src/demo/run-demo.js';
import type { FeedRow, Store } from '../../src/store/store.js';
import { Crm } from '../../src/write/events/crm.js';
import type { CrmEvent } from '../../src/write/events/events.js';
import type { TeamState } from '../../src/write/types.js';
import { describeEachBackend } from '../support/backends.js';

// docs/feed.md, "Demo data": nobody can have read the feed of a team no key names yet, so the demo
// drops superseded entries at once; a team a key names keeps them for retention.

const NOW = Date.parse('2026-03-01T00:00:00.000Z');

async function feedOf(store: Store, team: string): Promise<FeedRow[]> {
  const rows: FeedRow[] = [];
  for (let after = 0; ; ) {
    const page = await store.readFeed(team, after, 1000);
    rows.push(...page);
    if (page.length < 1000) return rows;
    after = page[page.length - 1]!.pos;
  }
}

describeEachBackend('demo feed compaction', (makeStore) => {
  it('a fresh demo team keeps only the newest feed entry of each record, the stored record byte for byte', async () => {
    const store = await makeStore();
    try {
      const { teams } = await runDemo(store, { seed: 7, teams: 2, leads: 30, now: NOW, batchSize: 100 });
      for (const team of teams) {
        const feed = await feedOf(store, team);
        const keys = feed.map((row) => `${row.kind}:${row.id}`);
        expect(new Set(keys).size).toBe(keys.length);
        for (const row of feed) {
          const record = await store.getRecord(row.kind, row.id);
          expect(row.version).toBe(record?.version);
          expect(row.body).toBe(record?.json);
        }
        expect(feed.some((row) => row.removed !== null)).toBe(true);
      }
    } finally {
      await store.close();
    }
  });

  it('a team a key has named keeps its superseded entries for retention', async () => {
    const store = await makeStore();
    try {
      const { teams } = await runDemo(store, { seed: 7, teams: 1, leads: 10, now: NOW, compactFeed: false });
      const team = teams[0]!;
      const before = await feedOf(store, team);
      const keys = new Set(before.map((row) => `${row.kind}:${row.id}`));
      expect(keys.size).toBeLessThan(before.length);
      await store.write(async (tx) => {
        const entity = await tx.getEntity<TeamState>('team', team);
        await tx.putEntity({ ...entity!, state: { ...entity!.state, captureRequestedAt: '2026-03-01T00:00:00.000Z' } });
      });
      expect(await compactUnreadFeeds(store, teams, new Map())).toBe(0);
      expect(await feedOf(store, team)).toEqual(before);
      // The same team before any key named it: compacted down to one entry per record.
      await store.write(async (tx) => {
        const entity = await tx.getEntity<TeamState>('team', team);
        await tx.putEntity({ ...entity!, state: { ...entity!.state, captureRequestedAt: null } });
      });
      expect(await compactUnreadFeeds(store, teams, new Map())).toBe(before.length - keys.size);
      expect((await feedOf(store, team)).length).toBe(keys.size);
    } finally {
      await store.close();
    }
  });
  it('entries a batch supersedes itself are never written for a team no key names, and kept for one a key names', async () => {
    const store = await makeStore();
    try {
      const crm = new Crm(store, new ManualClock(NOW), { dropSupersededOfUnreadTeams: true });
      const at = '2026-02-01T00:00:00.000Z';
      await crm.applyBatch([
        { type: 'organization.upsert', at, organization: 'org_1', name: 'Acme', plan: 'api_included' },
        { type: 'team.upsert', at, team: 'team_Unread', organization: 'org_1', name: 'Fresh' },
        { type: 'team.upsert', at, team: 'team_Named', organization: 'org_1', name: 'Read', captured_at: at },
      ]);
      const story = (team: string, lead: string): CrmEvent[] => [
        { type: 'lead.created', at, team, lead, status: 'new' },
        { type: 'lead.updated', at, lead, name: 'Ann' },
        { type: 'lead.updated', at, lead, name: 'Anna' },
      ];
      await crm.applyBatch([...story('team_Unread', 'lead_U'), ...story('team_Named', 'lead_N')]);
      const versions = async (team: string, lead: string) =>
        (await feedOf(store, team)).filter((row) => row.kind === 'lead' && row.id === lead).map((row) => row.version);
      expect(await versions('team_Unread', 'lead_U')).toEqual([3]);
      expect(await versions('team_Named', 'lead_N')).toEqual([1, 2, 3]);
      const [entry] = (await feedOf(store, 'team_Unread')).filter((row) => row.kind === 'lead');
      expect(entry?.body).toBe((await store.getRecord('lead', 'lead_U'))?.json);
    } finally {
      await store.close();
    }
  });
});
