import { afterEach, expect, it } from 'vitest';
import { describeEachBackend } from '../../support/backends.js';
import { FOREIGN_TEAM, newLead, OTHER_TEAM, TEAM, type World, world } from './fixture.js';

const AT = '2026-01-12T08:30:00.000Z';
const LATER = '2026-01-13T08:30:00.000Z';

describeEachBackend('write side: merge and transfer', (makeStore) => {
  let w: World;
  afterEach(async () => w?.store.close());

  it('merge: the lead not kept is archived with merged and merged_into, redelivered in the feed', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_K'), newLead('lead_D', { status: 'contacted' }));
    await w.apply({ type: 'lead.merged', at: AT, kept: 'lead_K', duplicate: 'lead_D', actor: 'human' });
    expect(await w.record('lead', 'lead_D')).toMatchObject({
      status: 'archived',
      archive_reason: 'merged',
      archived_from_status: 'contacted',
      merged_into: 'lead_K',
      version: 2,
    });
    expect((await w.feedOf('lead', 'lead_D')).map((f) => f.version)).toEqual([1, 2]);
    expect((await w.activities('lead_D')).at(-1)).toMatchObject({
      type: 'archived',
      from: 'contacted',
      to: 'archived',
    });
  });

  it('merge: the kept lead takes the stricter contact permissions', async () => {
    w = await world(makeStore);
    await w.apply(
      { ...newLead('lead_K', { email_opt_out: true, whatsapp_consent: true }), at: LATER },
      { ...newLead('lead_D', { do_not_contact: true, email_opt_out: true, whatsapp_consent: null }), at: AT },
      newLead('lead_E', { whatsapp_consent: false }),
    );
    await w.apply({ type: 'lead.merged', at: LATER, kept: 'lead_K', duplicate: 'lead_D' });
    expect((await w.record('lead', 'lead_K'))?.contact_permissions).toEqual({
      do_not_contact: true,
      email_opt_out: true,
      // The earliest opt-out wins.
      email_opt_out_at: AT,
      // A consent merged with no answer is no consent: a merge never gains a permission.
      whatsapp_consent: null,
      provenance: { do_not_contact: null, email_opt_out: null, whatsapp_consent: null },
    });
    await w.apply({ type: 'lead.merged', at: LATER, kept: 'lead_K', duplicate: 'lead_E' });
    // A refusal beats everything.
    expect((await w.record('lead', 'lead_K'))?.contact_permissions.whatsapp_consent).toBe(false);
  });

  it('merge of leads of different teams, or into a merged lead, is refused', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_K'), newLead('lead_D'), { ...newLead('lead_O'), team: OTHER_TEAM } as never);
    await expect(w.crm.apply({ type: 'lead.merged', at: AT, kept: 'lead_K', duplicate: 'lead_O' })).rejects.toThrow(
      /different teams/,
    );
    await w.apply({ type: 'lead.merged', at: AT, kept: 'lead_K', duplicate: 'lead_D' });
    await expect(w.crm.apply({ type: 'lead.merged', at: AT, kept: 'lead_D', duplicate: 'lead_K' })).rejects.toThrow(
      /merged/,
    );
  });

  it('merged_into becomes null when the kept lead is removed', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_K'), newLead('lead_D'), {
      type: 'lead.merged',
      at: AT,
      kept: 'lead_K',
      duplicate: 'lead_D',
    });
    await w.apply({ type: 'lead.deleted', at: LATER, lead: 'lead_K' });
    expect(await w.record('lead', 'lead_D')).toMatchObject({ merged_into: null, archive_reason: 'merged', version: 3 });
  });

  it('transfer: the original is archived with family_transfer and transferred_to; a new lead appears in the destination', async () => {
    w = await world(makeStore);
    await w.apply(
      newLead('lead_1', { name: 'Ana', phone: '+4930901820', source_channel: 'whatsapp', do_not_contact: true }),
    );
    await w.apply({
      type: 'lead.transferred',
      at: AT,
      lead: 'lead_1',
      to_team: OTHER_TEAM,
      new_lead: 'lead_2',
      actor: 'human',
    });
    expect(await w.record('lead', 'lead_1')).toMatchObject({
      status: 'archived',
      archive_reason: 'family_transfer',
      archived_from_status: 'new',
      transferred_to: { team: OTHER_TEAM, lead: 'lead_2' },
    });
    expect(await w.record('lead', 'lead_2')).toMatchObject({
      team: OTHER_TEAM,
      name: 'Ana',
      phone: '+4930901820',
      status: 'new',
      source: 'api',
      source_detail: 'family_handoff',
      source_channel: 'whatsapp',
      contact_permissions: { do_not_contact: true },
    });
    expect((await w.feedOf('lead', 'lead_2', OTHER_TEAM)).map((f) => f.version)).toEqual([1]);
    const attribution = await w.record('lead_attribution', 'lead_2');
    expect(attribution?.original_capture?.family_origin).toEqual({ team: TEAM, lead: 'lead_1' });
  });

  it('transfer: transferred_to.lead is null when the new lead cannot be named', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'), newLead('lead_3'));
    await w.apply({ type: 'lead.transferred', at: AT, lead: 'lead_1', to_team: OTHER_TEAM, new_lead: null });
    expect((await w.record('lead', 'lead_1'))?.transferred_to).toEqual({ team: OTHER_TEAM, lead: null });
    await w.apply({ type: 'lead.transferred', at: AT, lead: 'lead_3', to_team: OTHER_TEAM, new_lead: 'lead_4' });
    await w.apply({ type: 'lead.erased', at: LATER, lead: 'lead_4' });
    expect((await w.record('lead', 'lead_3'))?.transferred_to).toEqual({ team: OTHER_TEAM, lead: null });
  });

  it('transfer only to another team of the same organization', async () => {
    w = await world(makeStore);
    await w.apply(newLead('lead_1'));
    await expect(
      w.crm.apply({ type: 'lead.transferred', at: AT, lead: 'lead_1', to_team: FOREIGN_TEAM, new_lead: 'lead_2' }),
    ).rejects.toThrow(/not in the organization/);
    await expect(
      w.crm.apply({ type: 'lead.transferred', at: AT, lead: 'lead_1', to_team: TEAM, new_lead: 'lead_2' }),
    ).rejects.toThrow(/already in team/);
    expect(await w.store.getRecord('lead', 'lead_2')).toBeUndefined();
  });
});
