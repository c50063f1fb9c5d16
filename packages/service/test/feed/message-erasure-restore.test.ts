import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { RecordKind } from '../../src/schemas/enums.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { listErasures, replayErasures } from '../../src/write/events/erasure-replay.js';
import type { CrmEvent } from '../../src/write/events/events.js';
import { runCli } from '../cli/cli.js';
import { describeEachBackend } from '../support/backends.js';
import { feedWorld, newLead, T0, TEAM } from './feed-world.js';

// `message.erased` leaves no record tombstone: the erasure is kept as ids and time (an `erased_message`
// entity), `admin erasures export` lists it and `admin erasures replay` erases the message again, so a
// restore does not bring back its metadata (conversation counts and times, the lead's response facet).

const INBOUND_AT = '2026-01-11T10:00:00.000Z';
const OUTBOUND_AT = '2026-01-11T11:00:00.000Z';

const conversation: CrmEvent[] = [
  newLead('lead_1'),
  { type: 'conversation.started', at: T0, team: TEAM, conversation: 'conv_1', channel: 'whatsapp', lead: 'lead_1' },
  { type: 'message.recorded', at: INBOUND_AT, message: 'msg_1', conversation: 'conv_1', direction: 'inbound' },
  { type: 'message.recorded', at: OUTBOUND_AT, message: 'msg_2', conversation: 'conv_1', direction: 'outbound' },
];
const erase: CrmEvent = { type: 'message.erased', at: T0, message: 'msg_2' };

/** What a record exports, without its version and time. */
async function exported(store: Store, kind: RecordKind, id: string): Promise<Record<string, unknown>> {
  const json = (await store.getRecord(kind, id))?.json;
  if (!json) throw new Error(`${kind} ${id} is not served`);
  const { version: _v, updated_at: _u, ...fields } = JSON.parse(json) as Record<string, unknown>;
  return fields;
}

const metadata = async (store: Store) => ({
  conversation: await exported(store, 'conversation', 'conv_1'),
  response: await exported(store, 'lead_response', 'lead_1'),
});

const stores: Store[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

describeEachBackend('message erasure replay', (makeStore) => {
  it('an erased message stays erased after a restore: listed by the export, erased again by the replay', async () => {
    const live = await feedWorld(makeStore);
    const restored = await feedWorld(makeStore);
    stores.push(live.store, restored.store);
    for (const w of [live, restored]) await w.apply(...conversation);
    await live.apply(erase);
    expect((await metadata(live.store)).conversation).toMatchObject({
      outbound_count: 0,
      last_outbound_at: null,
      last_message_at: INBOUND_AT,
    });

    const list = await listErasures(live.store);
    expect(list).toEqual([expect.objectContaining({ kind: 'message', id: 'msg_2', team: TEAM })]);
    // The restored database still counts the message until the replay.
    expect((await metadata(restored.store)).conversation).toMatchObject({ outbound_count: 1 });
    expect(await replayErasures(restored.store, restored.clock, list)).toMatchObject({ erased: 1, stillLive: [] });
    expect(await metadata(restored.store)).toEqual(await metadata(live.store));
    expect(await replayErasures(restored.store, restored.clock, list)).toMatchObject({ erased: 0, unchanged: 1 });
    // The replayed erasure is kept too, and the id cannot be recorded again.
    expect((await listErasures(restored.store)).map((e) => `${e.kind} ${e.id}`)).toEqual(['message msg_2']);
    await expect(restored.apply({ ...(conversation[3] as CrmEvent), at: T0 })).rejects.toThrow(/msg_2 was erased/);
  });
});

const dir = mkdtempSync(join(tmpdir(), 'crm-export-message-erasure-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('restore procedure with an erased message (SQLite file)', { timeout: 120_000 }, () => {
  it('export, restore an older copy, replay: the message metadata stays gone', async () => {
    const path = join(dir, 'live.db');
    const backup = join(dir, 'backup.db');
    const erasures = join(dir, 'erasures.ndjson');
    const db = `sqlite:${path}`;
    const open = async () => {
      const s = new SqliteStore({ path });
      await s.migrate();
      stores.push(s);
      return s;
    };
    const w = await feedWorld(open);
    await w.apply(...conversation);
    await (w.store as SqliteStore).backup(backup);
    await w.apply(erase);
    const erased = await metadata(w.store);
    await (stores.pop() as Store).close();

    const exportRun = await runCli(['admin', 'erasures', 'export', '--db', db, '--to', erasures, '--json']);
    expect(exportRun.code, exportRun.stderr).toBe(0);
    expect(readFileSync(erasures, 'utf8')).toMatch(/^\{"kind":"message","id":"msg_2","team":"team_A1","erased_at":"/);
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
    copyFileSync(backup, path);
    expect((await metadata(await open())).conversation).toMatchObject({ outbound_count: 1 });
    await (stores.pop() as Store).close();

    const replay = await runCli(['admin', 'erasures', 'replay', erasures, '--db', db, '--yes', '--json']);
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ erased: 1, unchanged: 0 });
    expect(await metadata(await open())).toEqual(erased);
  });
});
