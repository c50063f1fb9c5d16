import { afterEach, expect, it } from 'vitest';
import { Crm } from '../../../src/write/events/crm.js';
import type { CrmEvent } from '../../../src/write/events/events.js';
import { ExampleTeamsOnlyTx, LiveTeamWriteError } from '../../../src/write/events/example-teams-only.js';
import { describeEachBackend } from '../../support/backends.js';
import { newLead, SERVICE, T0, TEAM, type World, world } from './fixture.js';

// Every example key reads an example team (livemode false): live personal data must never reach one, and
// a sandbox switch, which writes through the write side, must never change a live team.

const EXAMPLE = 'team_Ex1';
const AT = '2026-01-12T08:30:00.000Z';
const NO_COLUMNS = { lead: null, board: null, stage: null, status: null, email: null, phone: null, updatedAt: AT };

describeEachBackend('write side: live and example teams', (makeStore) => {
  let w: World;
  afterEach(async () => w?.store.close());

  const setUp = async () => {
    w = await world(makeStore);
    await w.apply(
      { type: 'team.upsert', at: T0, team: EXAMPLE, organization: 'org_1', name: 'Demo', livemode: false },
      { type: 'service.created', at: T0, team: EXAMPLE, service: 'svc_Ex', name: 'Demo visit' },
      newLead('lead_L', { name: 'Ana', email: 'ana@example.com', phone: '+4930901820' }),
      { type: 'lead.created', at: T0, team: EXAMPLE, lead: 'lead_E', status: 'new' },
      { type: 'call.recorded', at: T0, team: TEAM, call: 'call_L', line: 'own_line' },
      { type: 'conversation.started', at: T0, team: TEAM, conversation: 'conv_L', channel: 'whatsapp' },
    );
  };

  it('an event never links a live team with an example team', async () => {
    await setUp();
    const before = { live: await w.feed(TEAM), example: await w.feed(EXAMPLE) };
    const refused: [CrmEvent, RegExp][] = [
      [
        { type: 'lead.transferred', at: AT, lead: 'lead_L', to_team: EXAMPLE, new_lead: 'lead_Copy' },
        /team team_Ex1 is an example team and team team_A1 a live team: a transfer never links live and example/,
      ],
      [
        { type: 'lead.transferred', at: AT, lead: 'lead_E', to_team: TEAM, new_lead: 'lead_Copy' },
        /team team_A1 is a live team and team team_Ex1 an example team/,
      ],
      [{ type: 'lead.transferred', at: AT, lead: 'lead_L', to_team: EXAMPLE, new_lead: null }, /never links/],
      [{ type: 'lead.merged', at: AT, kept: 'lead_L', duplicate: 'lead_E' }, /different teams/],
      [
        { type: 'call.recorded', at: AT, team: EXAMPLE, call: 'call_E', line: 'own_line', lead: 'lead_L' },
        /another team/,
      ],
      [{ type: 'call.updated', at: AT, call: 'call_L', lead: 'lead_E' }, /another team/],
      [
        { type: 'conversation.started', at: AT, team: EXAMPLE, conversation: 'conv_E', channel: 'sms', lead: 'lead_L' },
        /another team/,
      ],
      [{ type: 'conversation.updated', at: AT, conversation: 'conv_L', lead: 'lead_E' }, /another team/],
      [
        {
          type: 'booking.created',
          at: AT,
          team: TEAM,
          booking: 'bkg_L',
          service: SERVICE,
          lead: 'lead_E',
          starts_at: AT,
          ends_at: AT,
        },
        /another team/,
      ],
      [
        {
          type: 'booking.created',
          at: AT,
          team: EXAMPLE,
          booking: 'bkg_E',
          service: 'svc_Ex',
          lead: 'lead_L',
          starts_at: AT,
          ends_at: AT,
        },
        /another team/,
      ],
    ];
    for (const [event, message] of refused) await expect(w.crm.apply(event), event.type).rejects.toThrow(message);
    expect(await w.store.getRecord('lead', 'lead_Copy')).toBeUndefined();
    expect(await w.feed(TEAM)).toEqual(before.live);
    expect(await w.feed(EXAMPLE)).toEqual(before.example);
    expect((await w.record('lead', 'lead_L'))?.transferred_to).toBeNull();
  });

  it('a write confined to example teams refuses every write to a live team and changes nothing', async () => {
    await setUp();
    const [lead, record, [entry]] = [
      await w.store.getEntity('lead', 'lead_L'),
      await w.store.getRecord('lead', 'lead_L'),
      await w.feedOf('lead', 'lead_L'),
    ];
    if (!lead || !record || !entry) throw new Error('fixture lead_L missing');
    const writes: [string, (tx: ExampleTeamsOnlyTx) => Promise<unknown>][] = [
      ['putEntity', (tx) => tx.putEntity(lead)],
      ['deleteEntity', (tx) => tx.deleteEntity('lead', 'lead_L')],
      [
        'putRecord',
        (tx) => tx.putRecord({ ...NO_COLUMNS, kind: 'lead', id: 'lead_L', team: TEAM, version: 9, json: '{}' }),
      ],
      ['removeRecord', (tx) => tx.removeRecord('lead', 'lead_L', 'erased', 9, AT)],
      ['appendFeed', (tx) => tx.appendFeed({ ...entry, version: 9 })],
      ['purgeFeed', (tx) => tx.purgeFeed('lead', 'lead_L')],
      ['setMeta', (tx) => tx.setMeta('some_setting', 'x')],
      [
        'applyWrites',
        (tx) =>
          tx.applyWrites({
            deleteEntities: [],
            putEntities: [],
            putRecords: [],
            supersede: [],
            removeRecords: [{ kind: 'lead', id: 'lead_L', reason: 'erased', version: 9, at: AT }],
            purgeFeed: [],
            appendFeed: [],
          }),
      ],
    ];
    await w.store.write(async (inner) => {
      for (const [name, write] of writes)
        await expect(write(new ExampleTeamsOnlyTx(inner)), name).rejects.toBeInstanceOf(LiveTeamWriteError);
    });
    expect(await w.store.getRecord('lead', 'lead_L')).toEqual(record);
    expect(await w.store.getEntity('lead', 'lead_L')).toEqual(lead);

    // Through the write side: an event on a live team is refused whole; one on the example team is applied.
    const sandbox = new Crm(w.store, w.clock, { exampleTeamsOnly: true });
    await expect(sandbox.apply({ type: 'lead.updated', at: AT, lead: 'lead_L', name: 'Bea' })).rejects.toThrow(
      /the live team team_A1/,
    );
    await sandbox.apply({ type: 'lead.updated', at: AT, lead: 'lead_E', name: 'Bea' });
    expect((await w.record('lead', 'lead_L'))?.name).toBe('Ana');
    expect((await w.record('lead', 'lead_E'))?.name).toBe('Bea');
  });
});
