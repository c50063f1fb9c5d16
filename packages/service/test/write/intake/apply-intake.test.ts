import { afterEach, describe, expect, it } from 'vitest';
import type { CrmEvent } from '../../../src/write/events/events.js';
import {
  applyIntakeBatch,
  checkIntakeBatch,
  type IntakeBatchInput,
  type IntakeEventInput,
} from '../../../src/write/intake/apply-intake.js';
import { describeEachBackend } from '../../support/backends.js';
import { newLead, T0, type World, world } from '../events/fixture.js';

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
