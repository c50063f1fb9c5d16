import { afterEach, expect, it } from 'vitest';
import { describeEachBackend } from '../../support/backends.js';
import { BOARD, newLead, T0, type World, world } from './fixture.js';

const AT = '2026-01-12T08:30:00.000Z';

describeEachBackend('write side: statuses, stages, assignees and their activities', (makeStore) => {
  let w: World;
  afterEach(async () => w?.store.close());

  it('record_kind is lead when the record has a pipeline status, else client (status and status_set_by null)', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1', { actor: 'api' }), newLead('lead_2', { status: null }));
    expect(await w.record('lead', 'lead_1')).toMatchObject({
      record_kind: 'lead',
      status: 'new',
      status_set_by: 'api',
    });
    expect(await w.record('lead', 'lead_2')).toMatchObject({
      record_kind: 'client',
      status: null,
      status_set_by: null,
      assignees: null,
    });
  });

  it('status_set_by is the actor of the transition that landed on the status, unknown when none was recorded', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'));
    expect((await w.record('lead', 'lead_1'))?.status_set_by).toBe('unknown');
    await w.apply({ type: 'lead.status_set', at: AT, lead: 'lead_1', status: 'contacted', actor: 'ai' });
    expect(await w.record('lead', 'lead_1')).toMatchObject({ status: 'contacted', status_set_by: 'ai' });
  });

  it('status_changed activity: from and to are status values, with stage_snapshot and value_snapshot', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1', { stage: 'stg_Call', estimated_value: 1200.5, actor: 'human' }));
    await w.apply({ type: 'lead.status_set', at: AT, lead: 'lead_1', status: 'qualified', actor: 'human' });
    const acts = await w.activities('lead_1');
    expect(acts.map((a) => a.type)).toEqual(['status_changed', 'stage_changed', 'status_changed']);
    expect(acts[0]).toMatchObject({ from: null, to: 'new', occurred_at: T0, actor_kind: 'human' });
    expect(acts[2]).toMatchObject({
      from: 'new',
      to: 'qualified',
      occurred_at: AT,
      stage_snapshot: { stage: 'stg_Call', board: BOARD, name: 'Call booked' },
      value_snapshot: 1200.5,
      version: 1,
    });
    for (const a of acts) await w.record('activity', a.id);
  });

  it('stage_changed activity: from and to are {stage, board} objects; a change made on its own reads unknown', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1', { stage: 'stg_New' }));
    await w.apply({ type: 'lead.stage_moved', at: AT, lead: 'lead_1', stage: 'stg_Won' });
    const act = (await w.activities('lead_1')).find((a) => a.type === 'stage_changed' && a.from !== null);
    expect(act).toMatchObject({
      from: { stage: 'stg_New', board: BOARD },
      to: { stage: 'stg_Won', board: BOARD },
      actor_kind: 'unknown',
      stage_snapshot: { stage: 'stg_Won', board: BOARD, name: 'Won' },
    });
    expect(await w.record('lead', 'lead_1')).toMatchObject({ stage: 'stg_Won', board: BOARD, version: 2 });
  });

  it('assignees_changed activity: from and to are sorted arrays; lead assignees are sorted', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'));
    await w.apply({ type: 'lead.assignees_set', at: AT, lead: 'lead_1', assignees: ['mem_Zed', 'mem_Amy'] });
    await w.apply({
      type: 'lead.assignees_set',
      at: AT,
      lead: 'lead_1',
      assignees: ['mem_Bob', 'mem_Zed'],
      actor: 'human',
    });
    const acts = (await w.activities('lead_1')).filter((a) => a.type === 'assignees_changed');
    expect(acts.map((a) => [a.from, a.to, a.actor_kind])).toEqual([
      [[], ['mem_Amy', 'mem_Zed'], 'unknown'],
      [['mem_Amy', 'mem_Zed'], ['mem_Bob', 'mem_Zed'], 'human'],
    ]);
    expect((await w.record('lead', 'lead_1'))?.assignees).toEqual(['mem_Bob', 'mem_Zed']);
  });

  it('an assignee who is not a member of the team is refused', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'));
    await expect(
      w.crm.apply({ type: 'lead.assignees_set', at: AT, lead: 'lead_1', assignees: ['mem_Nobody'] }),
    ).rejects.toThrow(/unknown member mem_Nobody/);
  });

  it('archive with reason: archived activity, archive_reason and archived_from_status; free text reads other', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'), newLead('lead_2'));
    await w.apply({ type: 'lead.status_set', at: T0, lead: 'lead_1', status: 'contacted', actor: 'human' });
    await w.apply({ type: 'lead.archived', at: AT, lead: 'lead_1', reason: 'not_interested', actor: 'human' });
    await w.apply({ type: 'lead.archived', at: AT, lead: 'lead_2', reason: 'moved abroad, call in 2027' });
    expect(await w.record('lead', 'lead_1')).toMatchObject({
      status: 'archived',
      archive_reason: 'not_interested',
      archived_from_status: 'contacted',
      status_set_by: 'human',
    });
    expect(await w.record('lead', 'lead_2')).toMatchObject({ archive_reason: 'other', archived_from_status: 'new' });
    const act = (await w.activities('lead_1')).at(-1);
    expect(act).toMatchObject({ type: 'archived', from: 'contacted', to: 'archived' });
    await expect(
      w.crm.apply({ type: 'lead.status_set', at: AT, lead: 'lead_1', status: 'new', actor: 'api' }),
    ).rejects.toThrow(/is archived/);
  });

  it('unarchive: unarchived activity back to the status it was archived from; archive fields become null', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'));
    await w.apply({ type: 'lead.status_set', at: T0, lead: 'lead_1', status: 'qualified', actor: 'human' });
    await w.apply({ type: 'lead.archived', at: T0, lead: 'lead_1', reason: 'no_contact' });
    await w.apply({ type: 'lead.unarchived', at: AT, lead: 'lead_1', actor: 'human' });
    expect(await w.record('lead', 'lead_1')).toMatchObject({
      status: 'qualified',
      archive_reason: null,
      archived_from_status: null,
      revived_at: null,
    });
    expect((await w.activities('lead_1')).at(-1)).toMatchObject({
      type: 'unarchived',
      from: 'archived',
      to: 'qualified',
    });
  });

  it('revive by the contact: revived_at set and a revived activity', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'), { type: 'lead.archived', at: T0, lead: 'lead_1', reason: 'no_contact' });
    await w.apply({ type: 'lead.revived', at: AT, lead: 'lead_1' });
    expect(await w.record('lead', 'lead_1')).toMatchObject({ status: 'new', revived_at: AT, archive_reason: null });
    expect((await w.activities('lead_1')).at(-1)).toMatchObject({
      type: 'revived',
      from: 'archived',
      to: 'new',
      actor_kind: 'system',
    });
    await expect(w.crm.apply({ type: 'lead.revived', at: AT, lead: 'lead_1' })).rejects.toThrow(/not archived/);
  });

  it('conversion without clearing: converted_at set, value_at_conversion from the estimated value, pipeline kept', async () => {
    w = await world(makeStore);
    await w.apply(
      newLead('lead_1', { stage: 'stg_Call', estimated_value: 900, priority: 'high', assignees: ['mem_Amy'] }),
    );
    await w.apply({ type: 'lead.converted', at: AT, lead: 'lead_1', clear_pipeline: false, actor: 'human' });
    expect(await w.record('lead', 'lead_1')).toMatchObject({
      status: 'converted',
      converted_at: AT,
      value_at_conversion: 900,
      pipeline_cleared: false,
      stage: 'stg_Call',
      board: BOARD,
      estimated_value: 900,
      assignees: ['mem_Amy'],
    });
    await w.apply({ type: 'lead.status_set', at: AT, lead: 'lead_1', status: 'lost', actor: 'human' });
    expect(await w.record('lead', 'lead_1')).toMatchObject({ converted_at: null, value_at_conversion: 900 });
  });

  it('conversion with clear pipeline data: pipeline_cleared, pipeline and source fields null except source_channel', async () => {
    w = await world(makeStore);
    await w.apply(
      newLead('lead_1', {
        stage: 'stg_Call',
        estimated_value: 900,
        priority: 'high',
        assignees: ['mem_Amy'],
        source: 'website_form',
        source_channel: 'widget',
        source_detail: 'unknown',
      }),
    );
    await w.apply({ type: 'lead.converted', at: AT, lead: 'lead_1', clear_pipeline: true, value: 1000, actor: 'ai' });
    expect(await w.record('lead', 'lead_1')).toMatchObject({
      status: 'converted',
      pipeline_cleared: true,
      value_at_conversion: 1000,
      board: null,
      stage: null,
      priority: null,
      assignees: null,
      estimated_value: null,
      source: null,
      source_detail: null,
      source_provenance: null,
      source_channel: 'widget',
    });
    const acts = await w.activities('lead_1');
    const status = acts.find((a) => a.type === 'status_changed' && a.to === 'converted');
    // The stage left is the snapshot when pipeline data is cleared.
    expect(status).toMatchObject({
      stage_snapshot: { stage: 'stg_Call', board: BOARD, name: 'Call booked' },
      value_snapshot: 1000,
    });
    expect(acts.at(-1)).toMatchObject({ type: 'assignees_changed', from: ['mem_Amy'], to: [] });
  });

  it('an activity never changes once written', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1', { stage: 'stg_New' }));
    const [first] = await w.activities('lead_1');
    await w.apply({ type: 'lead.stage_moved', at: AT, lead: 'lead_1', stage: 'stg_Won' });
    await w.apply({ type: 'lead.status_set', at: AT, lead: 'lead_1', status: 'lost', actor: 'human' });
    expect((await w.activities('lead_1'))[0]).toEqual(first);
  });
});
