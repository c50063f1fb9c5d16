// One test per rule of the spec's "Consumer behaviour the contract expects", against the fake server.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MirrorStore } from '../src/sync/mirror-store.js';
import { type FakeServer, leadObject, startFakeServer } from './support/fake-server.js';
import { type Harness, MIRROR_BACKENDS, mirrorHarness } from './support/mirror-harness.js';

const T = 'team_a';

for (const backend of MIRROR_BACKENDS) {
  describe(`consumer rules on ${backend}`, () => {
    let fake: FakeServer;
    let h: Harness;

    beforeEach(async () => {
      fake = await startFakeServer([T]);
      h = await mirrorHarness(fake, backend);
    });
    afterEach(async () => {
      await h.mirror.close();
      await fake.close();
    });

    const facet = (kind: string, lead: string) => ({ id: lead, object: kind, livemode: true });
    const activity = (id: string, lead: string) => ({
      id,
      object: 'activity',
      lead,
      type: 'status_changed',
      from: null,
      to: 'new',
    });

    describe('rule 1', () => {
      it('keeps one row per team, kind and id with its version; a lead and its facets share an id', async () => {
        fake.put(T, 'lead', leadObject('lead_1'));
        fake.put(T, 'lead_attribution', facet('lead_attribution', 'lead_1'));
        fake.put(T, 'lead_response', facet('lead_response', 'lead_1'));
        fake.put(T, 'lead', leadObject('lead_1', { name: 'Grace' }));
        await h.engine().run();
        const rows = await h.rows();
        expect(rows.map((r) => [r.team, r.kind, r.id, r.version])).toEqual([
          [T, 'lead', 'lead_1', 2],
          [T, 'lead_attribution', 'lead_1', 1],
          [T, 'lead_response', 'lead_1', 1],
        ]);
        expect(JSON.parse(rows[0]?.json ?? '{}').name).toBe('Grace');
      });

      it('keeps a tombstone (kind, id, version) for each removal', async () => {
        fake.put(T, 'call', { id: 'call_1', object: 'call', lead: null });
        fake.remove(T, 'call', 'call_1', 'erased');
        await h.engine().run();
        expect(await h.rows()).toEqual([]);
        expect(await h.tombstones()).toEqual([{ kind: 'call', id: 'call_1', version: 2, reason: 'erased' }]);
      });
    });

    describe('rule 2', () => {
      it('skips an item when a record of the same kind and id holds the same or a higher version', async () => {
        fake.put(T, 'call', { id: 'call_1', object: 'call', outcome: 'busy' });
        fake.put(T, 'call', { id: 'call_1', object: 'call', outcome: 'answered_human' });
        // a retried page delivered twice and an older version arriving late
        fake.push(T, { kind: 'call', id: 'call_1', version: 2, object: { id: 'call_1', outcome: 'replayed' } });
        fake.push(T, { kind: 'call', id: 'call_1', version: 1, object: { id: 'call_1', outcome: 'stale' } });
        await h.engine().run();
        const [row] = await h.rows();
        expect(row?.version).toBe(2);
        expect(JSON.parse(row?.json ?? '{}').outcome).toBe('answered_human');
      });

      it('skips an item when a tombstone of the same kind and id holds the same or a higher version', async () => {
        fake.put(T, 'conversation', { id: 'conv_1', object: 'conversation' });
        fake.remove(T, 'conversation', 'conv_1');
        fake.push(T, { kind: 'conversation', id: 'conv_1', version: 1, object: { id: 'conv_1' } });
        await h.engine().run();
        expect(await h.rows()).toEqual([]);
        expect((await h.tombstones()).map((t) => t.version)).toEqual([2]);
      });

      it("stores a lead's contact_permissions first", async () => {
        const statements: string[] = [];
        const logged = await mirrorHarness(fake, backend, (e) => {
          if (e.level === 'query' && /^insert into/.test(e.query.sql)) statements.push(e.query.sql);
        });
        const cp = {
          do_not_contact: true,
          email_opt_out: true,
          email_opt_out_at: null,
          whatsapp_consent: false,
          provenance: {},
        };
        fake.put(T, 'lead', leadObject('lead_1', { contact_permissions: cp }));
        await logged.engine().run();
        const cpAt = statements.findIndex((s) => s.includes('"mirror_contact_permissions"'));
        const leadAt = statements.findIndex((s) => s.includes('"mirror_records"'));
        expect(cpAt).toBeGreaterThanOrEqual(0);
        expect(cpAt).toBeLessThan(leadAt);
        const row = await logged.mirror.db
          .selectFrom('mirror_contact_permissions')
          .selectAll()
          .executeTakeFirstOrThrow();
        expect([row.do_not_contact, row.email_opt_out, row.whatsapp_consent]).toEqual([1, 1, 0]);
        await logged.mirror.close();
      });

      it("a lead's removal deletes its attribution, response and activities and ignores later ones", async () => {
        fake.put(T, 'lead', leadObject('lead_1'));
        fake.put(T, 'lead_attribution', facet('lead_attribution', 'lead_1'));
        fake.put(T, 'lead_response', facet('lead_response', 'lead_1'));
        fake.put(T, 'activity', activity('act_1', 'lead_1'));
        fake.put(T, 'lead', leadObject('lead_2'));
        fake.put(T, 'activity', activity('act_2', 'lead_2'));
        await h.engine().run();
        expect((await h.rows()).length).toBe(6);
        fake.remove(T, 'lead', 'lead_1', 'deleted');
        // later items of the removed lead arrive after its removal
        fake.put(T, 'lead_response', facet('lead_response', 'lead_1'));
        fake.put(T, 'activity', activity('act_3', 'lead_1'));
        await h.engine().run();
        expect((await h.rows()).map((r) => `${r.kind}:${r.id}`)).toEqual(['activity:act_2', 'lead:lead_2']);
        const cps = await h.mirror.db.selectFrom('mirror_contact_permissions').select('lead').execute();
        expect(cps.map((c) => c.lead)).toEqual(['lead_2']);
      });

      it('stores unknown feed kinds and unknown enum values and keeps syncing', async () => {
        fake.push(T, { kind: 'invoice', id: 'inv_1', version: 1, object: { id: 'inv_1', object: 'invoice' } });
        fake.put(T, 'lead', leadObject('lead_1', { status: 'hibernating', phone_status: 'unheard_of' }));
        await h.engine().run();
        const rows = await h.rows();
        expect(rows.map((r) => r.kind)).toEqual(['invoice', 'lead']);
        const unknown = await h.mirror.db
          .selectFrom('mirror_records')
          .where('kind', '=', 'invoice')
          .selectAll()
          .execute();
        expect(unknown).toHaveLength(1);
        expect(JSON.parse(rows[1]?.json ?? '{}').status).toBe('hibernating');
      });
    });

    describe('rule 3', () => {
      it('saves next_cursor only after the whole page is stored, in one transaction', async () => {
        class FailingStore extends MirrorStore {
          override async applyItems(
            ...args: Parameters<MirrorStore['applyItems']>
          ): ReturnType<MirrorStore['applyItems']> {
            await super.applyItems(args[0], args[1], args[2].slice(0, 2));
            throw new Error('disk full');
          }
        }
        const store = new FailingStore(h.mirror.db);
        await store.teamState(T);
        const items = [1, 2, 3].map((n) => ({
          kind: 'call',
          id: `call_${n}`,
          version: 1,
          object: { id: `call_${n}` },
        }));
        await expect(store.applyPage(T, { data: items, has_more: false, next_cursor: 'cur_x' })).rejects.toThrow(
          'disk full',
        );
        expect(await h.rows()).toEqual([]);
        expect(await h.cursor(T)).toBeNull();
      });

      it('while has_more is true asks again at once; when false waits 1 to 5 minutes (the interval)', async () => {
        for (let n = 0; n < 5; n++) fake.put(T, 'call', { id: `call_${n}`, object: 'call' });
        fake.maxPageItems = 2;
        const stop = new AbortController();
        // The interval is long beside what a loaded machine adds to three local requests (docs/contributing.md).
        const interval = 1500;
        const engine = h.engine({ once: false, intervalMs: interval, signal: stop.signal });
        const running = engine.run();
        const feedTimes = () => fake.requests.filter((r) => r.path === '/sync/changes').map((r) => r.at);
        const deadline = Date.now() + 10_000;
        while (feedTimes().length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        stop.abort();
        await running;
        const feed = feedTimes();
        // pages 1-3 (has_more true, true, false) back to back, then one poll after the interval
        expect(feed.length).toBe(4);
        expect((feed[2] ?? 0) - (feed[0] ?? 0)).toBeLessThan(interval / 2);
        expect((feed[3] ?? 0) - (feed[2] ?? 0)).toBeGreaterThanOrEqual(interval - 10);
      });

      it('one sync process per key and team: a second process gets a clear error', async () => {
        const { SyncLock, keyDigest } = await import('../src/sync/sync-lock.js');
        const other = new SyncLock(h.mirror.db, keyDigest(fake.key), T);
        await other.acquire();
        await expect(h.engine().run()).rejects.toThrow(/another sync process .* is syncing team_a with this key/);
        await other.release();
        await expect(h.engine().run()).resolves.toEqual({ [T]: 'caught_up' });
      });

      it('one sync process per key and team: a held lock on one team stops the whole run cleanly', async () => {
        fake.addTeam('team_b');
        const { SyncLock, keyDigest } = await import('../src/sync/sync-lock.js');
        const other = new SyncLock(h.mirror.db, keyDigest(fake.key), 'team_b');
        await other.acquire();
        const started = Date.now();
        await expect(h.engine({ once: false, intervalMs: 60_000 }).run()).rejects.toThrow(/team_b/);
        expect(Date.now() - started).toBeLessThan(5000);
        const locks = await h.mirror.db.selectFrom('mirror_locks').select('team').execute();
        expect(locks).toEqual([{ team: 'team_b' }]);
        await other.release();
      });

      it('one cursor per team for multi-team keys', async () => {
        fake.addTeam('team_b');
        fake.put(T, 'call', { id: 'call_1', object: 'call' });
        fake.put('team_b', 'call', { id: 'call_2', object: 'call' });
        fake.put('team_b', 'call', { id: 'call_3', object: 'call' });
        await h.engine().run();
        expect(await h.cursor(T)).toBe('cur_team_a_1');
        expect(await h.cursor('team_b')).toBe('cur_team_b_2');
        const feed = fake.requests.filter((r) => r.path === '/sync/changes');
        expect(new Set(feed.map((r) => r.team))).toEqual(new Set([T, 'team_b']));
        expect((await h.rows('team_b')).map((r) => r.id)).toEqual(['call_2', 'call_3']);
      });
    });

    describe('rule 4', () => {
      async function syncThenRestore() {
        fake.put(T, 'call', { id: 'call_1', object: 'call', outcome: 'busy' });
        fake.put(T, 'call', { id: 'call_1', object: 'call', outcome: 'answered_human' });
        fake.put(T, 'call', { id: 'call_2', object: 'call' });
        fake.put(T, 'call', { id: 'call_3', object: 'call' });
        await h.engine().run();
        // After a restore from backup: call_3 is gone without a removal item and call_1 is back at version 1.
        const log = fake.teams.get(T)?.log ?? [];
        fake.teams.get(T)!.log = log.filter((e) => !(e.id === 'call_3') && !(e.id === 'call_1' && e.version === 2));
      }

      for (const [status, code] of [
        [410, 'sync_cursor_expired'],
        [409, 'resync_required'],
      ] as const) {
        it(`${status} ${code}: full resync by mark and sweep, keeping the records until the sweep`, async () => {
          await syncThenRestore();
          fake.inject('/sync/changes', { status, code });
          fake.maxPageItems = 1;
          const countsDuringResync: number[] = [];
          await h.engine({ onProgress: () => void h.rows().then((r) => countsDuringResync.push(r.length)) }).run();
          // the records stayed while the feed was read again ...
          expect(Math.min(...countsDuringResync)).toBeGreaterThanOrEqual(2);
          // ... then the unmarked one was swept and versions were forgotten (call_1 back at version 1)
          expect((await h.rows()).map((r) => [r.id, r.version])).toEqual([
            ['call_1', 1],
            ['call_2', 1],
          ]);
          const feed = fake.requests.filter((r) => r.path === '/sync/changes');
          const refused = feed.findIndex((r) => r.query.cursor === 'cur_team_a_4');
          // the feed is read again without a cursor right after the refusal
          expect(feed[refused + 1]?.query.cursor).toBeUndefined();
        });
      }

      it('409 capture_not_ready: keeps everything and retries in a few minutes; never resyncs for it', async () => {
        fake.put(T, 'call', { id: 'call_1', object: 'call' });
        await h.engine().run();
        const cursor = await h.cursor(T);
        fake.inject('/sync/changes', { status: 409, code: 'capture_not_ready' });
        fake.put(T, 'call', { id: 'call_2', object: 'call' });
        const started = Date.now();
        const stop = new AbortController();
        const running = h.engine({ once: false, captureRetryMs: 300, intervalMs: 10_000, signal: stop.signal }).run();
        while ((await h.rows()).length < 2 && Date.now() - started < 5000) await new Promise((r) => setTimeout(r, 20));
        stop.abort();
        await running;
        const feed = fake.requests.filter((r) => r.path === '/sync/changes').slice(-2);
        expect(feed.map((r) => r.query.cursor)).toEqual([cursor, cursor]);
        expect((feed[1]?.at ?? 0) - (feed[0]?.at ?? 0)).toBeGreaterThanOrEqual(290);
        expect((await h.rows()).map((r) => r.id)).toEqual(['call_1', 'call_2']);
        const state = await h.store.teamState(T);
        expect(state.resyncing).toBe(0);
      });
    });

    describe('rule 5', () => {
      it("404 team_not_accessible: reads /teams and deletes the team's data and cursor only if it is no longer listed", async () => {
        fake.put(T, 'call', { id: 'call_1', object: 'call' });
        await h.engine().run();
        // still listed: nothing is deleted
        fake.inject('/sync/changes', { status: 404, code: 'team_not_accessible' });
        expect(await h.engine().run()).toEqual({ [T]: 'not_accessible' });
        expect(await h.rows()).toHaveLength(1);
        expect(await h.cursor(T)).toBe('cur_team_a_1');
        // no longer listed (the key lost the team between two runs): its data and cursor go
        fake.addTeam('team_b');
        fake.teams.delete(T);
        expect(await h.engine().runTeam(T)).toBe('removed');
        expect(await h.rows(T)).toEqual([]);
        expect(await h.cursor(T)).toBeUndefined();
      });
    });

    describe('rule 6', () => {
      const board = (id: string, stages: string[]) => ({
        id,
        object: 'board',
        name: id,
        stages: stages.map((s, i) => ({ object: 'stage', id: s, position: i })),
      });

      it('refreshes boards, members and bookable services at team start', async () => {
        fake.teams.get(T)?.members.push({ id: 'mem_1', object: 'member', team: T, display_name: 'M' });
        fake.teams
          .get(T)
          ?.services.push({ id: 'svc_1', object: 'booking_service', team: T, name: 'S', meeting_type: 'x' });
        await h.engine().run();
        const paths = fake.requests.map((r) => r.path);
        expect(paths.indexOf('/members')).toBeLessThan(paths.indexOf('/sync/changes'));
        expect(paths).toContain('/booking_services');
        expect(paths).toContain('/boards');
        const refs = await h.mirror.db.selectFrom('mirror_references').select(['kind', 'id']).orderBy('id').execute();
        expect(refs).toEqual([
          { kind: 'member', id: 'mem_1' },
          { kind: 'booking_service', id: 'svc_1' },
        ]);
      });

      it('refreshes when an item names an unknown id, and remembers ids that stay unresolved', async () => {
        await h.engine().run();
        const refreshes = () => fake.requests.filter((r) => r.path === '/members').length;
        expect(refreshes()).toBe(1);
        fake.put(T, 'board', board('brd_1', ['stg_1']));
        fake.teams.get(T)?.members.push({ id: 'mem_1', object: 'member', team: T, display_name: 'M' });
        fake.put(T, 'lead', leadObject('lead_1', { board: 'brd_1', stage: 'stg_1', assignees: ['mem_1', 'mem_gone'] }));
        await h.engine({ referencesMaxAgeMs: 86_400_000 }).run();
        // team start + one refresh for the unknown mem_1 / mem_gone
        expect(refreshes()).toBe(3);
        const unresolved = await h.mirror.db.selectFrom('mirror_unresolved').select(['kind', 'id']).execute();
        expect(unresolved).toEqual([{ kind: 'member', id: 'mem_gone' }]);
        // the remembered id does not trigger another refresh
        fake.put(T, 'lead', leadObject('lead_1', { assignees: ['mem_gone'] }));
        const before = refreshes();
        await h.engine().run();
        expect(refreshes() - before).toBe(1); // only the team-start refresh
      });

      it('refreshes at least once a day', async () => {
        fake.put(T, 'call', { id: 'call_1', object: 'call' });
        await h.engine().run();
        const dayAgo = new Date(Date.now() - 86_400_001).toISOString();
        await h.mirror.db.updateTable('mirror_teams').set({ references_refreshed_at: dayAgo }).execute();
        const stop = new AbortController();
        const engine = h.engine({ once: false, intervalMs: 100, signal: stop.signal });
        const before = fake.requests.filter((r) => r.path === '/members').length;
        const running = engine.run();
        await new Promise((r) => setTimeout(r, 350));
        stop.abort();
        await running;
        // team start, then again only because the stored refresh was a day old: not on every poll
        const after = fake.requests.filter((r) => r.path === '/members').length;
        expect(after - before).toBe(1);
        const state = await h.store.teamState(T);
        expect(Date.parse(state.references_refreshed_at ?? '')).toBeGreaterThan(Date.now() - 5000);
      });
    });

    describe('limits', () => {
      it('the daily quota and rate limits are respected: waits Retry-After before asking again', async () => {
        fake.put(T, 'call', { id: 'call_1', object: 'call' });
        fake.inject('/sync/changes', { status: 429, code: 'quota_exceeded', headers: { 'retry-after': '1' } });
        await h.engine().run();
        const feed = fake.requests.filter((r) => r.path === '/sync/changes');
        expect(feed).toHaveLength(2);
        expect((feed[1]?.at ?? 0) - (feed[0]?.at ?? 0)).toBeGreaterThanOrEqual(990);
        expect(await h.rows()).toHaveLength(1);
      });
    });
  });
}
