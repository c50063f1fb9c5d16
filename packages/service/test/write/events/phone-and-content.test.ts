import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import type { CrmEvent } from '../../../src/write/events/events.js';
import { describeEachBackend } from '../../support/backends.js';
import { newLead, SERVICE, T0, TEAM, type World, world } from './fixture.js';

describeEachBackend('write side: phone normalisation', (makeStore) => {
  let w: World;
  afterEach(async () => w?.store.close());

  const cases: [string | null, string | null, string][] = [
    ['+49 30 901820', '+4930901820', 'valid'],
    ['+1 123 456 7890', null, 'invalid'], // no North American area code starts with 1
    ['+1 650 253 0000', '+16502530000', 'valid'],
    ['030 901820', null, 'invalid'], // stored without a country prefix: never guessed from the default country
    ['+49 12', null, 'invalid'],
    ['not a number', null, 'invalid'],
    ['   ', null, 'missing'],
    [null, null, 'missing'],
  ];
  it('phone is E.164 only when the number validates without a default country; phone_status valid, invalid or missing', async () => {
    w = await world(makeStore);
    for (const [i, [raw, phone, status]] of cases.entries()) {
      await w.apply(newLead(`lead_${i}`, { phone: raw }));
      expect(await w.record('lead', `lead_${i}`)).toMatchObject({ phone, phone_status: status });
    }
  });
});

describe('write side: content is never stored', () => {
  let dir: string | undefined;
  afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

  it('content carried by events (message text, notes, transcripts, free text, form answers) is not in the database file', async () => {
    dir = mkdtempSync(join(tmpdir(), 'crm-write-'));
    const path = join(dir, 'crm.db');
    const secrets = [
      'SECRET-MESSAGE-TEXT-7f3a',
      'SECRET-NOTE-91bc',
      'SECRET-TRANSCRIPT-22de',
      'SECRET-SUMMARY-5a01',
      'https://recordings.example/SECRET-REC-44',
      'SECRET-ANSWER-0c9e',
      'SECRET-CUSTOM-FIELD-d1d1',
      'SECRET-ARCHIVE-FREE-TEXT-b7b7',
    ];
    const [text, note, transcript, summary, recording, answer, custom, freeText] = secrets;
    const store = new SqliteStore({ path });
    await store.migrate();
    const w = await world(async () => store);
    const events = [
      newLead('lead_1', { note, custom_fields: { shoe_size: custom } } as never),
      { type: 'lead.updated', at: T0, lead: 'lead_1', notes: [note] },
      { type: 'lead.archived', at: T0, lead: 'lead_1', reason: freeText, free_text: freeText },
      { type: 'submission.received', at: T0, submission: 's1', lead: 'lead_1', answers: { q1: answer } },
      {
        type: 'conversation.started',
        at: T0,
        team: TEAM,
        conversation: 'conv_1',
        lead: 'lead_1',
        channel: 'sms',
        subject: text,
      },
      {
        type: 'message.recorded',
        at: T0,
        message: 'm1',
        conversation: 'conv_1',
        direction: 'inbound',
        text,
        attachments: [text],
      },
      {
        type: 'call.recorded',
        at: T0,
        team: TEAM,
        call: 'call_1',
        line: 'voice_platform',
        lead: 'lead_1',
        transcript,
        summary,
        recording_url: recording,
      },
      {
        type: 'booking.created',
        at: T0,
        team: TEAM,
        booking: 'bkg_1',
        lead: 'lead_1',
        service: SERVICE,
        starts_at: '2026-02-01T10:00:00Z',
        ends_at: '2026-02-01T10:30:00Z',
        notes: note,
      },
    ] as unknown as CrmEvent[];
    await w.crm.applyBatch(events);
    // The events were applied: the records exist.
    expect(await w.record('call', 'call_1')).toBeDefined();
    expect((await w.record('lead', 'lead_1'))?.archive_reason).toBe('other');
    await store.close();
    const bytes = readdirSync(dir)
      .map((f) => readFileSync(join(dir as string, f)).toString('latin1'))
      .join('\n');
    expect(bytes).toContain('lead_1');
    for (const secret of secrets) expect(bytes.includes(secret), secret).toBe(false);
  });
});

describe('write side: erased means unrecoverable from live storage (SQLite)', () => {
  let dir: string | undefined;
  afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

  it("after a lead is erased, its email and phone are not in the database file's or the WAL file's bytes", async () => {
    dir = mkdtempSync(join(tmpdir(), 'crm-erase-'));
    const path = join(dir, 'crm.db');
    const personal = ['erase-me-7q2x@example.org', '+4915127483916', 'Zebulonia-Erasure'];
    const store = new SqliteStore({ path });
    await store.migrate();
    const w = await world(async () => store);
    // Versions that put the data in several rows, feed bodies and index entries.
    await w.apply(
      newLead('lead_E', { name: personal[2], email: personal[0], phone: '+49 151 27483916', assignees: [] }),
      { type: 'lead.updated', at: T0, lead: 'lead_E', company: 'Erasure GmbH' },
      { type: 'lead.status_set', at: T0, lead: 'lead_E', status: 'contacted', actor: 'human' },
      newLead('lead_Keep', { name: 'Kept', email: 'kept@example.org' }),
    );
    // Scanned while the store is open: closing checkpoints and deletes the WAL, which would hide it.
    const files = () => ['', '-wal'].map((suffix) => readFileSync(path + suffix).toString('latin1')).join('\n');
    const before = files();
    for (const value of personal) expect(before.includes(value), `${value} before`).toBe(true);
    await w.apply({ type: 'lead.erased', at: T0, lead: 'lead_E' });
    const after = files();
    expect(after).toContain('kept@example.org');
    for (const value of personal) expect(after.includes(value), `${value} after erasure`).toBe(false);
    await store.close();
  });
});
