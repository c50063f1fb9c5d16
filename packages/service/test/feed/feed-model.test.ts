import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Principal } from '../../src/access/access-control.js';
import { ManualClock } from '../../src/clock.js';
import { CursorCodec } from '../../src/cursor-codec.js';
import { markRestore } from '../../src/feed/feed-epoch.js';
import { trimFeedOnce } from '../../src/feed/feed-jobs.js';
import { type FeedDeps, feedPage } from '../../src/feed/feed-page.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { SCOPES } from '../../src/schemas/enums.js';
import type { Store } from '../../src/store/store.js';
import { Crm } from '../../src/write/events/crm.js';
import type { CrmEvent } from '../../src/write/events/events.js';
import { WriteError } from '../../src/write/events/write-error.js';
import { describeEachBackend } from '../support/backends.js';
import { ConsumerMirror, serviceData } from './consumer-mirror.js';
import type { FeedPageJson } from './feed-world.js';

// Model-based test of the whole delivery contract: random sequences of write-side operations
// interleaved with feed reads (random limits, retried pages), restore marks, retention runs and clock
// jumps (past the hold-back, past cursor expiry). Consumers that follow the spec's rules must end,
// after a final catch-up, with exactly the service's current data of each team.

const CI = Boolean(process.env.CI);
const RUNS: Record<string, number> = { sqlite: CI ? 1000 : 150, postgres: CI ? 60 : 25 };
const SECOND = 1000;
const DAY = 86_400_000;
const AT = '2026-01-10T10:00:00.000Z';
const STATUSES = ['new', 'contacted', 'qualified', 'negotiating', 'lost', 'unreachable'] as const;

const idx = fc.nat({ max: 60 });
const opArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('create' as const),
      status: fc.constantFrom(null, ...STATUSES),
      stage: fc.nat({ max: 3 }),
      assignees: fc.subarray([0, 1, 2]),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('update' as const),
      lead: idx,
      company: fc.constantFrom('Acme', 'Globex', null),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('status' as const), lead: idx, status: fc.constantFrom(...STATUSES) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('stage' as const), lead: idx, stage: fc.nat({ max: 2 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('assignees' as const), lead: idx, members: fc.subarray([0, 1, 2]) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('archive' as const), lead: idx, revive: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('merge' as const), kept: idx, dup: idx }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('transfer' as const), lead: idx, named: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('convert' as const), lead: idx, clear: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('permissions' as const), lead: idx, dnc: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('call' as const), lead: fc.option(idx), seconds: fc.nat({ max: 60 }) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('conversation' as const), lead: fc.option(idx) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('message' as const), conv: idx, inbound: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('booking' as const), lead: fc.option(idx) }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('bookingUpdate' as const), booking: idx, cancel: fc.boolean() }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('removeLead' as const), lead: idx, erase: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('removeOther' as const),
      kind: fc.constantFrom('call', 'conversation', 'booking'),
      which: idx,
      erase: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('restoreMark' as const), again: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('trim' as const) }) },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      ms: fc.oneof(
        { weight: 8, arbitrary: fc.integer({ min: 0, max: 15 * SECOND }) },
        { weight: 2, arbitrary: fc.integer({ min: 1, max: 2 * DAY }) },
        { weight: 2, arbitrary: fc.integer({ min: 29 * DAY, max: 60 * DAY }) },
      ),
      // The retention job runs on its own schedule: sometimes right after the clock moved.
      trim: fc.boolean(),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('read' as const),
      team: fc.nat({ max: 1 }),
      limit: fc.integer({ min: 1, max: 7 }),
      retry: fc.boolean(),
    }),
  },
);
type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

/** Sequences every run includes besides the random ones: the paths where expiry and the sweep matter. */
const EXAMPLES: [Op[]][] = [
  [
    [
      { op: 'create', status: 'new', stage: 0, assignees: [1] },
      { op: 'advance', ms: 11 * SECOND, trim: false },
      { op: 'read', team: 0, limit: 7, retry: false },
      { op: 'removeLead', lead: 1, erase: true },
      { op: 'advance', ms: 46 * DAY, trim: true },
      { op: 'read', team: 0, limit: 7, retry: false },
    ],
  ],
  [
    [
      { op: 'create', status: null, stage: 3, assignees: [] },
      { op: 'create', status: 'new', stage: 1, assignees: [] },
      { op: 'advance', ms: 11 * SECOND, trim: false },
      { op: 'read', team: 0, limit: 2, retry: true },
      { op: 'restoreMark', again: false },
      { op: 'removeLead', lead: 1, erase: false },
      { op: 'read', team: 0, limit: 3, retry: false },
      { op: 'advance', ms: 31 * DAY, trim: true },
      { op: 'read', team: 0, limit: 3, retry: true },
    ],
  ],
];

describeEachBackend('changes feed: model-based delivery contract', (makeStore, backend) => {
  let store: Store;
  const clock = new ManualClock(Date.parse('2026-01-15T09:00:00.000Z'));
  const codec = new CursorCodec();
  let run = 0;
  beforeAll(async () => {
    store = await makeStore();
    codec.setSecret(randomBytes(32));
    // Every run uses its own teams in one database, so runs need no new database each.
    await new Crm(store, clock).apply({
      type: 'organization.upsert',
      at: AT,
      organization: 'orgM',
      name: 'M',
      plan: 'api_included',
    });
  });
  afterAll(async () => store?.close());

  it(`a consumer following the spec's rules ends with an exact copy (${RUNS[backend]} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 60, size: 'max' }), async (ops) => {
        run++;
        await runScenario(store, clock, codec, `R${run}`, ops);
      }),
      { numRuns: RUNS[backend] ?? 50, endOnFailure: !CI, examples: EXAMPLES },
    );
  }, 600_000);
});

async function runScenario(store: Store, clock: ManualClock, codec: CursorCodec, r: string, ops: Op[]): Promise<void> {
  clock.advance(DAY); // runs share the clock; each starts well after the last one's changes
  const crm = new Crm(store, clock);
  const teams = [`team_${r}A`, `team_${r}B`] as const;
  const members = [0, 1, 2].map((i) => `mem_${r}m${i}`);
  const stages = [0, 1, 2].map((i) => `stg_${r}s${i}`);
  const service = `svc_${r}`;
  await crm.applyBatch([
    ...teams.map((team) => ({ type: 'team.upsert' as const, at: AT, team, organization: 'orgM', captured_at: AT })),
    ...members.map((member) => ({ type: 'member.joined' as const, at: AT, team: teams[0], member })),
    { type: 'service.created', at: AT, team: teams[0], service, name: 'Visit' },
    {
      type: 'board.upsert',
      at: AT,
      team: teams[0],
      board: `brd_${r}`,
      name: 'Sales',
      stages: stages.map((stage, i) => ({ stage, name: `S${i}` })),
    },
  ]);
  const principal: Principal = {
    integrationId: 'prn_m',
    keyId: 'k',
    name: 'm',
    livemode: true,
    last4: 'abcd',
    teams: [...teams],
    scopes: [...SCOPES],
  };
  const deps: FeedDeps = { store, clock, limits: DEFAULT_LIMITS, codec, access: { checkTeam: async () => {} } };
  const mirrors = teams.map(
    (team) =>
      new ConsumerMirror(async (cursor, limit) => {
        const { json } = await feedPage(deps, { principal, team, cursor, limit });
        return JSON.parse(json.toString()) as FeedPageJson;
      }),
  );

  const made = { lead: [] as string[], call: [] as string[], conversation: [] as string[], booking: [] as string[] };
  let n = 0;
  const fresh = (prefix: string) => `${prefix}_${r}x${n++}`;
  // Mostly a record that still exists, sometimes any (a refused operation must change nothing).
  const pickAny = (list: string[], i: number) => (list.length ? (list[i % list.length] as string) : undefined);
  const live = async (kind: 'lead' | 'call' | 'conversation' | 'booking', list: string[], i: number) => {
    if (i % 10 === 0) return pickAny(list, i);
    const alive: string[] = [];
    for (const id of list) if (await store.getEntity(kind, id)) alive.push(id);
    return pickAny(alive, i);
  };
  const apply = async (...events: CrmEvent[]) => {
    try {
      await crm.applyBatch(events);
    } catch (error) {
      // A refused operation (merge of a merged lead, a removed record...) writes nothing.
      if (!(error instanceof WriteError)) throw error;
    }
  };

  for (const op of ops) {
    switch (op.op) {
      case 'create': {
        const lead = fresh('lead');
        made.lead.push(lead);
        await apply({
          type: 'lead.created',
          at: AT,
          team: teams[0],
          lead,
          status: op.status,
          ...(op.stage < 3 ? { stage: stages[op.stage] } : {}),
          assignees: op.assignees.map((i) => members[i] as string),
          email: `${lead}@example.com`,
        } as CrmEvent);
        break;
      }
      case 'update': {
        const lead = await live('lead', made.lead, op.lead);
        if (lead) await apply({ type: 'lead.updated', at: AT, lead, company: op.company });
        break;
      }
      case 'status': {
        const lead = await live('lead', made.lead, op.lead);
        if (lead) await apply({ type: 'lead.status_set', at: AT, lead, status: op.status, actor: 'human' });
        break;
      }
      case 'stage': {
        const lead = await live('lead', made.lead, op.lead);
        if (lead) await apply({ type: 'lead.stage_moved', at: AT, lead, stage: stages[op.stage] as string });
        break;
      }
      case 'assignees': {
        const lead = await live('lead', made.lead, op.lead);
        if (lead)
          await apply({
            type: 'lead.assignees_set',
            at: AT,
            lead,
            assignees: op.members.map((i) => members[i] as string),
          });
        break;
      }
      case 'archive': {
        const lead = await live('lead', made.lead, op.lead);
        if (lead)
          await apply(
            op.revive
              ? { type: 'lead.revived', at: AT, lead }
              : { type: 'lead.archived', at: AT, lead, reason: 'not_interested' },
          );
        break;
      }
      case 'merge': {
        const kept = await live('lead', made.lead, op.kept);
        const duplicate = await live('lead', made.lead, op.dup);
        if (kept && duplicate && kept !== duplicate) await apply({ type: 'lead.merged', at: AT, kept, duplicate });
        break;
      }
      case 'transfer': {
        const lead = await live('lead', made.lead, op.lead);
        if (lead)
          await apply({
            type: 'lead.transferred',
            at: AT,
            lead,
            to_team: teams[1],
            new_lead: op.named ? fresh('lead') : null,
          });
        break;
      }
      case 'convert': {
        const lead = await live('lead', made.lead, op.lead);
        if (lead) await apply({ type: 'lead.converted', at: AT, lead, clear_pipeline: op.clear, value: 100 });
        break;
      }
      case 'permissions': {
        const lead = await live('lead', made.lead, op.lead);
        if (lead)
          await apply({
            type: 'lead.contact_permissions',
            at: AT,
            lead,
            do_not_contact: op.dnc,
            email_opt_out: !op.dnc,
          });
        break;
      }
      case 'call': {
        const call = fresh('call');
        made.call.push(call);
        const lead = op.lead === null ? null : await live('lead', made.lead, op.lead);
        await apply({
          type: 'call.recorded',
          at: AT,
          team: teams[0],
          call,
          line: 'pbx',
          lead: lead ?? null,
          duration_seconds: op.seconds,
        });
        break;
      }
      case 'conversation': {
        const conversation = fresh('conv');
        made.conversation.push(conversation);
        const lead = op.lead === null ? null : await live('lead', made.lead, op.lead);
        await apply({
          type: 'conversation.started',
          at: AT,
          team: teams[0],
          conversation,
          lead: lead ?? null,
          channel: 'whatsapp',
        });
        break;
      }
      case 'message': {
        const conversation = await live('conversation', made.conversation, op.conv);
        if (conversation) {
          await apply({
            type: 'message.recorded',
            at: new Date(clock.now()).toISOString(),
            message: `m${r}x${n++}`,
            conversation,
            direction: op.inbound ? 'inbound' : 'outbound',
          });
        }
        break;
      }
      case 'booking': {
        const booking = fresh('bkg');
        made.booking.push(booking);
        const lead = op.lead === null ? null : await live('lead', made.lead, op.lead);
        await apply({
          type: 'booking.created',
          at: AT,
          team: teams[0],
          booking,
          lead: lead ?? null,
          service,
          starts_at: '2026-02-01T10:00:00Z',
          ends_at: '2026-02-01T11:00:00Z',
        });
        break;
      }
      case 'bookingUpdate': {
        const booking = await live('booking', made.booking, op.booking);
        if (booking)
          await apply({ type: 'booking.updated', at: AT, booking, status: op.cancel ? 'cancelled' : 'completed' });
        break;
      }
      case 'removeLead': {
        const lead = await live('lead', made.lead, op.lead);
        if (lead) await apply({ type: op.erase ? 'lead.erased' : 'lead.deleted', at: AT, lead });
        break;
      }
      case 'removeOther': {
        const id = await live(op.kind, made[op.kind], op.which);
        if (id)
          await apply({
            type: `${op.kind}.${op.kind === 'booking' || !op.erase ? 'deleted' : 'erased'}`,
            at: AT,
            [op.kind]: id,
          } as CrmEvent);
        break;
      }
      case 'restoreMark':
        // Half of them only: a mark makes every consumer resync, which would hide the other paths.
        if (op.again) await markRestore(store);
        break;
      case 'trim':
        await trimFeedOnce(store, clock, DEFAULT_LIMITS);
        break;
      case 'advance':
        clock.advance(op.ms);
        if (op.trim) await trimFeedOnce(store, clock, DEFAULT_LIMITS);
        break;
      case 'read':
        await (mirrors[op.team] as ConsumerMirror).step(op.limit, op.retry);
        break;
    }
  }

  clock.advance(DEFAULT_LIMITS.feedHoldBackMs + 1);
  for (const [i, mirror] of mirrors.entries()) {
    await mirror.catchUp(100);
    expect(mirror.snapshot()).toEqual(await serviceData(store, teams[i] as string));
  }
}
