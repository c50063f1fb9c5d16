import { randomBytes } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import type { Principal } from '../../src/access/access-control.js';
import { ManualClock } from '../../src/clock.js';
import { CursorCodec } from '../../src/cursor-codec.js';
import { type FeedDeps, feedPage } from '../../src/feed/feed-page.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { SCOPES } from '../../src/schemas/enums.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { Store } from '../../src/store/store.js';
import { Crm } from '../../src/write/events/crm.js';
import { type Projection, publish } from '../../src/write/events/publish.js';
import { describeEachBackend } from '../support/backends.js';
import { ConsumerMirror, serviceData } from './consumer-mirror.js';
import type { FeedPageJson } from './feed-world.js';

// Commit order equals feed order, seen through the feed itself: many writers (on PostgreSQL, several
// stores as separate processes would be) commit changes after random delays while a consumer per
// team polls GET /v1/sync/changes' page logic with no hold-back. The hold-back is the spec's, not the
// guarantee: with none, the consumer must still see every position and every version, in order.

const WRITERS = 12;
const TX_PER_WRITER = Number(process.env.CI ? 60 : 30);
const TEAMS = ['team_C1', 'team_C2', 'team_C3'] as const;
const RECORDS = 25;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rnd = (below: number) => Math.floor(Math.random() * below);

describeEachBackend('changes feed: concurrent writers', (makeStore, backend) => {
  const stores: Store[] = [];
  afterEach(async () => {
    // Extra PostgreSQL stores share the test schema: close them before the one that drops it.
    for (const s of stores.reverse()) await s.close();
    stores.length = 0;
  });

  it('many concurrent writers with randomly delayed commits: no skipped change', async () => {
    const main = await makeStore();
    stores.push(main);
    const writers: Store[] = [main];
    if (backend === 'postgres' && main instanceof PostgresStore) {
      for (let i = 0; i < 3; i++) {
        const extra = new PostgresStore({ url: process.env.PG_URL as string, schema: main.schema, poolSize: 4 });
        stores.push(extra);
        writers.push(extra);
      }
    }
    const clock = new ManualClock();
    const at = '2026-01-10T10:00:00.000Z';
    await new Crm(main, clock).applyBatch(
      TEAMS.map((team) => ({ type: 'team.upsert' as const, at, team, captured_at: at })),
    );

    const codec = new CursorCodec();
    codec.setSecret(randomBytes(32));
    const principal: Principal = {
      integrationId: 'prn_c',
      keyId: 'k',
      name: 'c',
      livemode: true,
      last4: 'abcd',
      teams: [...TEAMS],
      scopes: [...SCOPES],
    };
    const deps: FeedDeps = {
      store: main,
      clock,
      limits: { ...DEFAULT_LIMITS, feedHoldBackMs: 0 },
      codec,
      access: { checkTeam: async () => {} },
    };
    const seen = new Map<string, { pos: number[]; versions: Map<string, number[]> }>();
    const mirrors = TEAMS.map((team) => {
      const log = { pos: [] as number[], versions: new Map<string, number[]>() };
      seen.set(team, log);
      return new ConsumerMirror(async (cursor, limit) => {
        const page = JSON.parse(
          (await feedPage(deps, { principal, team, cursor, limit })).json.toString(),
        ) as FeedPageJson;
        for (const item of page.data) {
          const list = log.versions.get(item.id) ?? [];
          list.push(item.version);
          log.versions.set(item.id, list);
        }
        return page;
      });
    });

    let writing = true;
    let n = 0;
    const write = async (store: Store) => {
      for (let i = 0; i < TX_PER_WRITER; i++) {
        const team = TEAMS[rnd(TEAMS.length)] as string;
        await store.write(async (tx) => {
          if (Math.random() < 0.3) await sleep(rnd(15));
          for (let k = 1 + rnd(3); k > 0; k--) {
            const id = `lead_${team.slice(5)}r${rnd(RECORDS)}`;
            // A stand-in body that changes on every write: this test checks feed order, not the lead's shape.
            const body = { id, object: 'lead', team, n: n++, version: 0, updated_at: '' };
            await publish(tx, clock, 'lead', id, team, body as unknown as Projection<'lead'>);
          }
          // A commit delayed past several polls of the reader.
          if (Math.random() < 0.3) await sleep(rnd(30));
        });
      }
    };
    const read = async () => {
      while (writing) {
        for (const mirror of mirrors) await mirror.step(1 + rnd(100));
        await sleep(rnd(3));
      }
    };
    const reader = read();
    await Promise.all(Array.from({ length: WRITERS }, (_, i) => write(writers[i % writers.length] as Store)));
    writing = false;
    await reader;

    for (const [i, team] of TEAMS.entries()) {
      const mirror = mirrors[i] as ConsumerMirror;
      await mirror.catchUp(100);
      expect(mirror.resyncs).toBe(0);
      const head = await main.feedHead(team);
      const log = seen.get(team);
      // Every position once, in order: nothing skipped, nothing delivered twice.
      const delivered = [...(log?.versions.values() ?? [])].reduce((sum, v) => sum + v.length, 0);
      expect(delivered).toBe(head);
      for (const versions of log?.versions.values() ?? []) {
        expect(versions).toEqual(versions.map((_, j) => j + 1));
      }
      expect(mirror.snapshot()).toEqual(await serviceData(main, team));
    }
  }, 120_000);
});
