import { afterEach, expect, it } from 'vitest';
import { WriteError } from '../../../src/write/events/write-error.js';
import { describeEachBackend } from '../../support/backends.js';
import { BOARD, newLead, T0, TEAM, type World, world } from './fixture.js';

describeEachBackend('write side: versions and the feed', (makeStore) => {
  let w: World;
  afterEach(async () => w?.store.close());

  it('a new lead is version 1 with one feed item carrying the full record, and its two facets', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1', { name: 'Ana', email: ' Ana@Example.COM ', phone: '+49 30 901820' }));
    const lead = await w.record('lead', 'lead_1');
    expect(lead).toMatchObject({
      id: 'lead_1',
      object: 'lead',
      version: 1,
      team: TEAM,
      livemode: true,
      record_kind: 'lead',
    });
    expect(lead?.updated_at).toBe('2026-01-15T09:00:00.000Z');
    expect(lead?.created_at).toBe(T0);
    const items = await w.feedOf('lead', 'lead_1');
    expect(items).toHaveLength(1);
    expect(JSON.parse(items[0]?.body ?? '')).toEqual(lead);
    expect(await w.record('lead_attribution', 'lead_1')).toMatchObject({ version: 1, original_capture: null });
    expect(await w.record('lead_response', 'lead_1')).toMatchObject({ version: 1, awaiting_reply: false });
  });

  it('version rises only when an exported field changes, and updated_at is when the service recorded it', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1', { name: 'Ana' }));
    w.clock.advance(60_000);
    await w.apply({ type: 'lead.updated', at: T0, lead: 'lead_1', name: 'Ana' });
    expect(await w.version('lead', 'lead_1')).toBe(1);
    await w.apply({ type: 'lead.updated', at: T0, lead: 'lead_1', name: 'Anna', company: 'Acme' });
    const lead = await w.record('lead', 'lead_1');
    expect(lead).toMatchObject({ version: 2, name: 'Anna', company: 'Acme', updated_at: '2026-01-15T09:01:00.000Z' });
    expect((await w.feedOf('lead', 'lead_1')).map((f) => f.version)).toEqual([1, 2]);
  });

  it('updating a non-exported field writes no version and no feed item', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'));
    const before = (await w.feed()).length;
    await w.apply({ type: 'lead.internal_updated', at: T0, lead: 'lead_1', score: 88, language: 'de' });
    expect(await w.version('lead', 'lead_1')).toBe(1);
    expect((await w.feed()).length).toBe(before);
  });

  it('filter columns of a lead hold its board, stage, status, trimmed lower-cased email and E.164 phone', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1', { stage: 'stg_Call', email: '  Ana@Example.COM ', phone: '+4930901820' }));
    expect(await w.record('lead', 'lead_1')).toMatchObject({
      board: BOARD,
      stage: 'stg_Call',
      email: '  Ana@Example.COM ',
    });
    const page = (q: Parameters<World['store']['listRecords']>[0]['filter']) =>
      w.store.listRecords({ team: TEAM, kind: 'lead', after: 0, limit: 10, ...(q ? { filter: q } : {}) });
    expect(await page({ by: 'board', value: BOARD })).toHaveLength(1);
    expect(await page({ by: 'stage', value: 'stg_Call' })).toHaveLength(1);
    expect(await page({ by: 'status', value: 'new' })).toHaveLength(1);
    expect(await w.store.searchLeads({ team: TEAM, email: 'ana@example.com', after: 0, limit: 10 })).toHaveLength(1);
    expect(await w.store.searchLeads({ team: TEAM, phone: '+4930901820', after: 0, limit: 10 })).toHaveLength(1);
  });

  it('an unknown lead is refused with a clear WriteError and nothing is applied', async () => {
    w = await world(makeStore);
    const before = (await w.feed()).length;
    await expect(w.crm.apply({ type: 'lead.updated', at: T0, lead: 'lead_nope', name: 'x' })).rejects.toThrow(
      /unknown lead lead_nope/,
    );
    expect((await w.feed()).length).toBe(before);
  });

  it('a lead of another team is refused (wrong team)', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'));
    await expect(
      w.crm.apply({ type: 'call.recorded', at: T0, team: 'team_B1', call: 'call_1', line: 'pbx', lead: 'lead_1' }),
    ).rejects.toThrow(/belongs to another team/);
  });

  it('batch atomicity: a failing event in a batch leaves nothing applied and the error names its index', async () => {
    w = await world(makeStore);
    const before = (await w.feed()).length;
    const error = await w.crm
      .applyBatch([
        newLead('lead_1'),
        newLead('lead_2'),
        { type: 'lead.archived', at: T0, lead: 'lead_x', reason: 'x' },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteError);
    expect((error as WriteError).index).toBe(2);
    expect((error as Error).message).toMatch(/^event 2: unknown lead lead_x/);
    expect(await w.store.getRecord('lead', 'lead_1')).toBeUndefined();
    expect(await w.store.getEntity('lead', 'lead_2')).toBeUndefined();
    expect((await w.feed()).length).toBe(before);
  });

  it('an event that does not match its schema is refused naming the field, never its value', async () => {
    w = await world(makeStore);
    const bad = { type: 'lead.created', at: T0, team: TEAM, lead: 'not-a-lead-id' } as never;
    await expect(w.crm.apply(bad)).rejects.toThrow(/field "lead"/);
    await expect(w.crm.apply({ ...newLead('lead_1'), stray: 1 } as never)).rejects.toThrow(/unknown field "stray"/);
  });

  it('a removed lead id is never reused: a record that comes back needs a new id', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'), { type: 'lead.deleted', at: T0, lead: 'lead_1' });
    await expect(w.crm.apply(newLead('lead_1'))).rejects.toThrow(/use a new id/);
  });
});
