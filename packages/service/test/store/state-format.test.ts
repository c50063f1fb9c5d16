import { describe, expect, it } from 'vitest';
import { runDemo } from '../../src/demo/run-demo.js';
import { COMPACT_STATE_KINDS, readState, storedState } from '../../src/store/sql/state-format.js';
import type { EntityKind } from '../../src/store/store.js';
import { describeEachBackend } from '../support/backends.js';

// The write side's state of the busiest kinds is stored as an array of values (state-format.ts). What is
// read back is the state written, field for field and in the same order; anything that is not exactly the
// listed fields is stored as its object, and an object stored before is read as it is.

const roundTrip = (kind: EntityKind, state: unknown) =>
  readState(kind, JSON.parse(JSON.stringify(storedState(kind, state))));

describeEachBackend('entity states as stored', (makeStore) => {
  it('every state of a demo reads back as written, in the same field order', async () => {
    const store = await makeStore();
    try {
      const { teams } = await runDemo(store, {
        seed: 11,
        teams: 1,
        leads: 15,
        now: Date.parse('2026-11-01T00:00:00Z'),
      });
      let compact = 0;
      for (const kind of COMPACT_STATE_KINDS) {
        for (const e of await store.findEntities(kind, { team: teams[0] as string })) {
          const state = e.state as Record<string, unknown>;
          const again = roundTrip(kind, state) as Record<string, unknown>;
          expect(again).toEqual(state);
          expect(Object.keys(again)).toEqual(Object.keys(state));
          if (Array.isArray(storedState(kind, state))) compact += 1;
        }
      }
      expect(compact).toBeGreaterThan(30);
    } finally {
      await store.close();
    }
  });
});

describe('entity state format', () => {
  const message = {
    direction: 'inbound',
    purpose: null,
    failed: false,
    imported: false,
    visitorTurn: false,
    at: '2026-11-08T06:25:18.175Z',
    seq: 1,
    receipt: null,
  };

  it('a listed kind is stored as its values, without the field names', () => {
    expect(storedState('message', message)).toEqual([
      'inbound',
      null,
      false,
      false,
      false,
      '2026-11-08T06:25:18.175Z',
      1,
      null,
    ]);
    expect(roundTrip('message', message)).toEqual(message);
  });

  it('a state with a field more, one less or one undefined, or no object, is stored as itself in an array', () => {
    const { receipt: _, ...less } = message;
    const others = [
      { ...message, extra: 1 },
      less,
      { ...message, receipt: undefined },
      ['a', 'b'],
      ['a'],
      'a',
      7,
      null,
    ];
    for (const state of others) {
      expect(storedState('message', state)).toEqual([state]);
      expect(roundTrip('message', state)).toEqual(JSON.parse(JSON.stringify(state)));
    }
  });

  it('a kind not listed, and an object stored before, are read as they are', () => {
    const team = { organization: 'org_1', state: 'active', name: 'Sales' };
    expect(storedState('team', team)).toBe(team);
    expect(storedState('team', ['a'])).toEqual(['a']);
    expect(readState('message', message)).toBe(message);
    expect(readState('team', ['a'])).toEqual(['a']);
  });

  it('an array shorter than the list reads the fields after it as absent (a field added later)', () => {
    expect(readState('message', ['outbound', null])).toEqual({ direction: 'outbound', purpose: null });
  });
});
