import { afterEach, describe, expect, it } from 'vitest';
import { trimIntakeIdsOnce } from '../../../src/feed/feed-jobs.js';
import { runCommand } from '../../../src/write/commands/commands.js';
import type { CrmEvent } from '../../../src/write/events/events.js';
import { WriteError } from '../../../src/write/events/write-error.js';
import {
  applyIntakeBatch,
  checkIntakeBatch,
  type IntakeBatchInput,
  type IntakeEventInput,
} from '../../../src/write/intake/apply-intake.js';
import { INTAKE_ID_RETENTION_MS } from '../../../src/write/intake/intake-defaults.js';
import { refusalOf } from '../../../src/write/intake/lanes.js';
import { describeEachBackend } from '../../support/backends.js';
import { newLead, T0, TEAM, type World, world } from '../events/fixture.js';

// The intake's transactional apply (write/intake/apply-intake.ts): a source's batches in seq order,
// duplicates by seq and by id, id conflicts, gaps, and the quarantine with its ordering lanes.

const renamed = (lead: string, name: string, id?: string): CrmEvent =>
  ({ type: 'lead.updated', at: T0, lead, name, ...(id ? { id } : {}) }) as CrmEvent;
const withId = (event: CrmEvent, id: string): CrmEvent => ({ ...event, id }) as CrmEvent;
const seqd = (first: number, events: CrmEvent[]): IntakeEventInput[] =>
  events.map((event, i) => ({ seq: first + i, event }));

describe('checkIntakeBatch', () => {
  it('refuses a source name outside the pattern and seqs that do not increase, naming the field', () => {
    expect(checkIntakeBatch({ source: 'Bad Name', events: [] })?.param).toBe('source');
    const events = [
      { seq: 2, event: {} },
      { seq: 2, event: {} },
    ];
    expect(checkIntakeBatch({ source: 'crm', events })?.param).toBe('events[1].seq');
    expect(checkIntakeBatch({ source: 'crm', follows: 5, events: [{ seq: 5, event: {} }] })?.param).toBe(
      'events[0].seq',
    );
  });
});

describeEachBackend('intake batches', (makeStore) => {
  let w: World;
  const worlds: World[] = [];
  afterEach(async () => {
    for (const x of worlds.splice(0)) await x.store.close();
  });
  const open = async () => {
    w = await world(makeStore);
    worlds.push(w);
    return w;
  };
  const post = (batch: IntakeBatchInput) => applyIntakeBatch(w.store, w.clock, batch);
  const name = async (lead: string) => (await w.record('lead', lead))?.name;

  it('applies a batch in seq order and moves the source to its last seq', async () => {
    await open();
    const result = await post({ source: 'crm', events: seqd(1, [newLead('lead_1'), renamed('lead_1', 'Ada')]) });
    expect(result).toEqual({
      ok: true,
      source: 'crm',
      last_seq: 2,
      results: [
        { seq: 1, outcome: 'applied' },
        { seq: 2, outcome: 'applied' },
      ],
    });
    expect(await name('lead_1')).toBe('Ada');
    const [source] = await w.store.intakeSources();
    expect(source).toMatchObject({ source: 'crm', lastSeq: 2, applied: 2, lastEventAt: Date.parse(T0) });
  });

  it('a re-sent batch answers duplicate for every event at or below the last seq and changes nothing', async () => {
    await open();
    const events = seqd(1, [newLead('lead_1'), renamed('lead_1', 'Ada')]);
    await post({ source: 'crm', events });
    await post({ source: 'crm', events: seqd(3, [renamed('lead_1', 'Bea')]) });
    const version = await w.version('lead', 'lead_1');
    const again = await post({ source: 'crm', events });
    expect(again.ok && again.results.map((r) => r.outcome)).toEqual(['duplicate', 'duplicate']);
    expect(await name('lead_1')).toBe('Bea');
    expect(await w.version('lead', 'lead_1')).toBe(version);
  });

  it('a batch that does not follow the last applied seq is a sequence_gap naming last_seq, and nothing is applied', async () => {
    await open();
    await post({ source: 'crm', events: seqd(1, [newLead('lead_1')]) });
    const gap = await post({ source: 'crm', follows: 5, events: seqd(6, [renamed('lead_1', 'Ada')]) });
    expect(gap).toEqual({ ok: false, code: 'sequence_gap', source: 'crm', last_seq: 1 });
    expect(await name('lead_1')).toBeNull();
    const implicit = await post({ source: 'crm', events: seqd(3, [renamed('lead_1', 'Ada')]) });
    expect(implicit.ok).toBe(false);
    // A producer with holes in its numbers says what the batch follows.
    const holes = await post({ source: 'crm', follows: 1, events: seqd(7, [renamed('lead_1', 'Ada')]) });
    expect(holes.ok && holes.last_seq).toBe(7);
  });

  it('an id applied before answers duplicate with the same content and rejected id_conflict with other content', async () => {
    await open();
    await post({
      source: 'crm',
      events: seqd(1, [withId(newLead('lead_1'), 'ev-1'), renamed('lead_1', 'Ada', 'ev-2')]),
    });
    const result = await post({
      source: 'crm',
      events: seqd(3, [
        renamed('lead_1', 'Ada', 'ev-2'),
        renamed('lead_1', 'Zoe', 'ev-1'),
        renamed('lead_1', 'Cy', 'ev-3'),
      ]),
    });
    expect(result.ok && result.results).toEqual([
      { seq: 3, id: 'ev-2', outcome: 'duplicate' },
      { seq: 4, id: 'ev-1', outcome: 'rejected', code: 'id_conflict', field: 'id' },
      { seq: 5, id: 'ev-3', outcome: 'applied' },
    ]);
    expect(await name('lead_1')).toBe('Cy');
    const [source] = await w.store.intakeSources();
    expect(source).toMatchObject({ lastSeq: 5, applied: 3, duplicates: 1, rejected: 1 });
  });

  it('a refused event goes to the quarantine; later events of its lead wait behind it and unrelated events apply', async () => {
    await open();
    await post({ source: 'crm', events: seqd(1, [newLead('lead_1')]) });
    const result = await post({
      source: 'crm',
      events: seqd(2, [
        renamed('lead_9', 'Ghost', 'ev-a'),
        renamed('lead_1', 'Ada'),
        renamed('lead_9', 'Ghost 2'),
        newLead('lead_2'),
      ]),
    });
    expect(result.ok && result.results).toEqual([
      { seq: 2, id: 'ev-a', outcome: 'quarantined', code: 'unknown_lead', field: 'lead' },
      { seq: 3, outcome: 'applied' },
      { seq: 4, outcome: 'quarantined', code: 'waiting_behind' },
      { seq: 5, outcome: 'applied' },
    ]);
    expect(await name('lead_1')).toBe('Ada');
    expect(await w.record('lead', 'lead_2')).toBeDefined();
    // A later batch's event of the same lane waits too.
    const later = await post({ source: 'crm', events: seqd(6, [newLead('lead_9'), renamed('lead_2', 'Bo')]) });
    expect(later.ok && later.results.map((r) => r.code ?? r.outcome)).toEqual(['waiting_behind', 'applied']);
    const quarantine = await w.store.intakeQuarantine({ source: 'crm' });
    expect(quarantine.map((q) => [q.seq, q.lane, q.code, q.attempts])).toEqual([
      [2, 'lead:lead_9', 'unknown_lead', 1],
      [4, 'lead:lead_9', 'waiting_behind', 0],
      [6, 'lead:lead_9', 'waiting_behind', 0],
    ]);
  });

  it('a refusal does not undo the other events of the batch, before or after it', async () => {
    await open();
    const result = await post({
      source: 'crm',
      events: seqd(1, [newLead('lead_1'), renamed('lead_1', 'Ada'), renamed('lead_x', 'No'), renamed('lead_1', 'Bea')]),
    });
    expect(result.ok && result.results.map((r) => r.outcome)).toEqual(['applied', 'applied', 'quarantined', 'applied']);
    expect(await name('lead_1')).toBe('Bea');
    const versions = (await w.feedOf('lead', 'lead_1')).map((f) => f.version);
    expect(versions).toEqual([1, 2, 3]);
  });

  it('a refusal after an event that wrote part of the batch early runs the batch again without it, applying each other event once', async () => {
    await open();
    await w.apply(newLead('lead_1'), newLead('lead_2'), {
      type: 'call.recorded',
      at: T0,
      team: TEAM,
      call: 'call_1',
      lead: 'lead_1',
      line: 'pbx',
    } as CrmEvent);
    // Moving a call to another lead, then reading a lead's calls, writes the pending entities before the
    // refusal: the transaction is rolled back and run again (isolated-apply.ts).
    let transactions = 0;
    const write = w.store.write.bind(w.store);
    w.store.write = (fn) => {
      transactions += 1;
      return write(fn);
    };
    const result = await post({
      source: 'crm',
      events: seqd(1, [
        { type: 'call.updated', at: T0, call: 'call_1', lead: 'lead_2' } as CrmEvent,
        renamed('lead_9', 'Ghost'),
        renamed('lead_1', 'Ada'),
      ]),
    });
    expect(result.ok && result.results.map((r) => r.outcome)).toEqual(['applied', 'quarantined', 'applied']);
    expect(transactions).toBe(2);
    expect(await name('lead_1')).toBe('Ada');
    expect((await w.feedOf('lead', 'lead_1')).map((f) => f.version)).toEqual([1, 2]);
    expect((await w.feedOf('call', 'call_1')).map((f) => f.version)).toEqual([1, 2]);
  });

  it('two batches of one source sent at once never interleave: the second waits, then applies or is a gap', async () => {
    await open();
    const first = post({ source: 'crm', follows: 0, events: seqd(1, [newLead('lead_1'), renamed('lead_1', 'A')]) });
    const second = post({ source: 'crm', follows: 2, events: seqd(3, [renamed('lead_1', 'B')]) });
    const [a, b] = await Promise.all([first, second]);
    expect(a.ok).toBe(true);
    if (b.ok) {
      expect(b.results[0]?.outcome).toBe('applied');
      expect(await name('lead_1')).toBe('B');
    } else {
      expect(b).toEqual({ ok: false, code: 'sequence_gap', source: 'crm', last_seq: 0 });
      expect(await name('lead_1')).toBe('A');
    }
    expect((await w.feedOf('lead', 'lead_1')).map((f) => f.version)).toEqual(b.ok ? [1, 2, 3] : [1, 2]);
  });

  it('an erasure never waits behind its lane: it applies and drops what was parked before it in that lane', async () => {
    await open();
    await post({ source: 'crm', events: seqd(1, [newLead('lead_1'), newLead('lead_2')]) });
    const assign = (lead: string): CrmEvent =>
      ({ type: 'lead.assignees_set', at: T0, lead, assignees: ['mem_Nobody'] }) as CrmEvent;
    // An earlier batch parks an event of lead_2's lane.
    await post({ source: 'crm', events: seqd(3, [assign('lead_2'), renamed('lead_2', 'Waits')]) });
    expect((await w.store.intakeQuarantine({})).map((q) => q.seq)).toEqual([3, 4]);
    const result = await post({
      source: 'crm',
      events: seqd(5, [
        assign('lead_1'),
        renamed('lead_1', 'Held'),
        { type: 'lead.erased', at: T0, lead: 'lead_1' } as CrmEvent,
        { type: 'lead.erased', at: T0, lead: 'lead_2' } as CrmEvent,
      ]),
    });
    expect(result.ok && result.results.map((r) => r.code ?? r.outcome)).toEqual([
      'superseded_by_erasure',
      'superseded_by_erasure',
      'applied',
      'applied',
    ]);
    expect(await w.store.intakeQuarantine({})).toEqual([]);
    for (const lead of ['lead_1', 'lead_2']) expect((await w.store.getRecord('lead', lead))?.removed).toBe('erased');
  });

  it('two sources keep their own positions; a new source starts after 0 unless the batch says what it follows', async () => {
    await open();
    expect((await post({ source: 'crm', events: seqd(10, [newLead('lead_1')]) })).ok).toBe(false);
    await post({ source: 'crm', follows: 0, events: seqd(10, [newLead('lead_1')]) });
    const other = await post({ source: 'billing', events: seqd(1, [newLead('lead_2')]) });
    expect(other.ok && other.last_seq).toBe(1);
    expect((await w.store.intakeSources()).map((s) => [s.source, s.lastSeq])).toEqual([
      ['billing', 1],
      ['crm', 10],
    ]);
  });
});

describeEachBackend('the intake quarantine', (makeStore) => {
  let w: World;
  afterEach(async () => w.store.close());
  const post = (first: number, events: CrmEvent[]) =>
    applyIntakeBatch(w.store, w.clock, { source: 'crm', follows: first - 1, events: seqd(first, events) });
  const retry = (input: { source?: string; lane?: string } = {}) =>
    runCommand(w.store, 'intake.quarantine_retry', { ...input, now: w.clock.now() });
  const quarantined = async () => (await w.store.intakeQuarantine({})).map((q) => [q.seq, q.code, q.attempts]);

  it('a retry that is refused again counts one more attempt and keeps the lane waiting', async () => {
    w = await world(makeStore);
    await post(1, [renamed('lead_9', 'Ghost'), renamed('lead_9', 'Ghost 2')]);
    const result = await retry({ lane: 'lead:lead_9' });
    expect(result).toMatchObject({ applied: 0, refused: 1, waiting: 1 });
    expect(await quarantined()).toEqual([
      [1, 'unknown_lead', 2],
      [2, 'waiting_behind', 0],
    ]);
  });

  it('a retry once the cause is fixed applies the lane in seq order and empties it; later events then apply', async () => {
    w = await world(makeStore);
    await post(1, [renamed('lead_9', 'Ghost', 'ev-1'), renamed('lead_9', 'Ghost 2', 'ev-2')]);
    await w.apply(newLead('lead_9'));
    const result = await retry({ lane: 'lead:lead_9' });
    expect(result).toMatchObject({ applied: 2, refused: 0, waiting: 0 });
    expect(await quarantined()).toEqual([]);
    expect((await w.record('lead', 'lead_9'))?.name).toBe('Ghost 2');
    // Its ids count as applied: sent again, they are duplicates.
    const again = await post(3, [renamed('lead_9', 'Ghost', 'ev-1'), renamed('lead_9', 'Ada')]);
    expect(again.ok && again.results.map((r) => r.outcome)).toEqual(['duplicate', 'applied']);
    expect((await w.store.intakeSources())[0]).toMatchObject({ applied: 3, duplicates: 1, quarantined: 2 });
  });

  it('retry --all goes lane by lane: a lane still refused does not hold another back', async () => {
    w = await world(makeStore);
    await post(1, [renamed('lead_8', 'A'), renamed('lead_9', 'B')]);
    await w.apply(newLead('lead_8'));
    const result = await retry();
    expect(result).toMatchObject({ applied: 1, refused: 1 });
    expect((await w.store.intakeQuarantine({})).map((q) => q.lane)).toEqual(['lead:lead_9']);
  });

  it('drop removes one event by source and seq, or a whole lane; the lane then no longer blocks', async () => {
    w = await world(makeStore);
    await post(1, [renamed('lead_9', 'A'), renamed('lead_9', 'B'), renamed('lead_7', 'C')]);
    const one = await runCommand(w.store, 'intake.quarantine_drop', { source: 'crm', seq: 3 });
    expect(one.map((e) => [e.seq, e.lane, e.outcome])).toEqual([[3, 'lead:lead_7', 'dropped']]);
    const lane = await runCommand(w.store, 'intake.quarantine_drop', { lane: 'lead:lead_9' });
    expect(lane.map((e) => e.seq)).toEqual([1, 2]);
    expect(await quarantined()).toEqual([]);
    await w.apply(newLead('lead_9'));
    const later = await post(4, [renamed('lead_9', 'D')]);
    expect(later.ok && later.results[0]?.outcome).toBe('applied');
    await expect(runCommand(w.store, 'intake.quarantine_drop', {})).rejects.toThrow(/name a lane/);
  });

  it('applied ids are kept at least 7 days and trimmed after', async () => {
    w = await world(makeStore);
    await post(1, [withId(newLead('lead_1'), 'ev-1')]);
    w.clock.advance(INTAKE_ID_RETENTION_MS - 60_000);
    expect(await trimIntakeIdsOnce(w.store, w.clock)).toBe(0);
    const within = await applyIntakeBatch(w.store, w.clock, {
      source: 'crm',
      follows: 0,
      events: [{ seq: 1, event: withId(newLead('lead_1'), 'ev-1') }],
    });
    expect(within.ok && within.results[0]?.outcome).toBe('duplicate');
    w.clock.advance(120_000);
    expect(await trimIntakeIdsOnce(w.store, w.clock)).toBe(1);
    // The source's last seq is kept for ever: the same seq is still a duplicate.
    const late = await applyIntakeBatch(w.store, w.clock, {
      source: 'crm',
      follows: 0,
      events: [{ seq: 1, event: withId(newLead('lead_1'), 'ev-1') }],
    });
    expect(late.ok && late.results[0]?.outcome).toBe('duplicate');
  });
});

describe('refusal codes', () => {
  it('name the kind the write side did not find, and the event field holding its id', () => {
    const event = { type: 'lead.assignees_set', at: T0, lead: 'lead_1', assignees: ['mem_X'] } as CrmEvent;
    expect(refusalOf(event, new WriteError('unknown member mem_X'))).toMatchObject({
      code: 'unknown_member',
      field: 'assignees',
    });
    expect(refusalOf(event, new WriteError('member mem_X has left the team'))).toMatchObject({
      code: 'member_left',
      field: 'assignees',
    });
    expect(refusalOf(event, new WriteError('lead lead_1 is already converted'))).toMatchObject({
      code: 'write_refused',
      field: 'lead',
    });
  });
});
