import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { packState, unpackState } from '../../src/store/sql/entity-state.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openSqliteFile } from '../support/sqlite-file.js';

// SQLite keeps an entity's state deflated against a preset dictionary (store/sql/entity-state.ts); rows
// written as JSON text before still read, and the state read back is the one written.

const state = {
  name: 'Ana',
  surname: null,
  tags: ['vip'],
  permissions: { doNotContact: false, emailOptOutAt: null },
  note: 'ünïcode ✓',
  activitySeq: 3,
};

describe('entity state on SQLite', () => {
  const paths: string[] = [];
  afterEach(() => {
    for (const path of paths.splice(0)) {
      for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
    }
  });

  it('is stored packed, smaller than its JSON, and read back equal; JSON text written before still reads', async () => {
    const path = join(tmpdir(), `entity-state-${process.pid}-${Math.random().toString(36).slice(2)}.db`);
    paths.push(path);
    const store = new SqliteStore({ path });
    await store.migrate();
    await store.write(async (tx) => {
      await tx.putEntity({ kind: 'lead', id: 'lead_A', team: 'team_A', parent: null, state });
    });
    const file = openSqliteFile(path);
    const row = file
      .prepare(`SELECT typeof(state) AS type, length(state) AS size FROM entities WHERE id = 'lead_A'`)
      .get();
    expect(row).toMatchObject({ type: 'blob' });
    expect((row as { size: number }).size).toBeLessThan(JSON.stringify(state).length);
    expect((await store.getEntity('lead', 'lead_A'))?.state).toEqual(state);

    file
      .prepare(`INSERT INTO entities (kind, id, team, parent, state) VALUES ('lead', 'lead_B', 'team_A', NULL, ?)`)
      .run(JSON.stringify(state));
    expect((await store.getEntity('lead', 'lead_B'))?.state).toEqual(state);
    file.close();
    await store.close();
  });

  it('a packed state of an unknown format is refused, not misread', () => {
    const packed = packState(state);
    expect(unpackState(packed)).toEqual(state);
    packed[0] = 9;
    expect(() => unpackState(packed)).toThrow(/unknown format 9/);
  });
});
