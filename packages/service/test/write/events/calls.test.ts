import { afterEach, expect, it } from 'vitest';
import type { CrmEvent } from '../../../src/write/events/events.js';
import { describeEachBackend } from '../../support/backends.js';
import { TEAM, type World, world } from './fixture.js';

const AT = '2026-01-12T08:30:00.000Z';
type CallInput = Omit<Extract<CrmEvent, { type: 'call.recorded' }>, 'type' | 'at' | 'team' | 'call'>;
let n = 0;
async function call(w: World, input: CallInput) {
  const id = `call_${++n}`;
  await w.apply({ type: 'call.recorded', at: AT, team: TEAM, call: id, ...input });
  const c = await w.record('call', id);
  return [c?.outcome, c?.outcome_basis];
}

describeEachBackend('write side: call outcome and outcome_basis per line type', (makeStore) => {
  let w: World;
  afterEach(async () => w?.store.close());

  it('own line inbound: inbound_verdict, or carrier_answer_only when unclassified', async () => {
    w = await world(makeStore);
    expect(await call(w, { line: 'own_line', direction: 'inbound', verdict: 'answered_ai' })).toEqual([
      'answered_ai',
      'inbound_verdict',
    ]);
    expect(await call(w, { line: 'own_line', direction: 'inbound', carrier_result: 'answered' })).toEqual([
      'unknown',
      'carrier_answer_only',
    ]);
    expect(await call(w, { line: 'own_line', direction: 'inbound', carrier_result: 'busy' })).toEqual([
      'busy',
      'carrier_answer_only',
    ]);
  });

  it('own line outbound: always carrier_answer_only, so a connected outbound call reads unknown', async () => {
    w = await world(makeStore);
    expect(
      await call(w, { line: 'own_line', direction: 'outbound', carrier_result: 'answered', verdict: 'answered_human' }),
    ).toEqual(['unknown', 'carrier_answer_only']);
    expect(await call(w, { line: 'own_line', direction: 'outbound', carrier_result: 'no_answer' })).toEqual([
      'no_answer',
      'carrier_answer_only',
    ]);
  });

  it('voice platform: ai_analysis', async () => {
    w = await world(makeStore);
    expect(await call(w, { line: 'voice_platform', direction: 'outbound', verdict: 'voicemail' })).toEqual([
      'voicemail',
      'ai_analysis',
    ]);
  });

  it('connected PBX: duration_floor, answered at 10 seconds or more', async () => {
    w = await world(makeStore);
    expect(await call(w, { line: 'pbx', duration_seconds: 10 })).toEqual(['answered_human', 'duration_floor']);
    expect(await call(w, { line: 'pbx', duration_seconds: 9.99 })).toEqual(['no_answer', 'duration_floor']);
    expect(await call(w, { line: 'pbx', duration_seconds: 0, carrier_result: 'busy' })).toEqual([
      'busy',
      'duration_floor',
    ]);
  });

  it('the answered-call floor is a parameter', async () => {
    w = await world(makeStore, { answeredCallFloorSeconds: 20 });
    expect(await call(w, { line: 'pbx', duration_seconds: 15 })).toEqual(['no_answer', 'duration_floor']);
    expect(await call(w, { line: 'pbx', duration_seconds: 20 })).toEqual(['answered_human', 'duration_floor']);
  });

  it('web voice session: browser_session', async () => {
    w = await world(makeStore);
    expect(await call(w, { line: 'browser_session', carrier_result: 'answered' })).toEqual([
      'answered_human',
      'browser_session',
    ]);
  });

  it('a live call: outcome unknown, basis none, duration null; it ends with its line rule', async () => {
    w = await world(makeStore);
    expect(await call(w, { line: 'pbx', live: true, duration_seconds: 42 })).toEqual(['unknown', 'none']);
    expect((await w.record('call', `call_${n}`))?.duration_seconds).toBeNull();
    await w.apply({ type: 'call.updated', at: AT, call: `call_${n}`, live: false, duration_seconds: 61.9 });
    expect(await w.record('call', `call_${n}`)).toMatchObject({
      outcome: 'answered_human',
      outcome_basis: 'duration_floor',
      duration_seconds: 61,
      version: 2,
    });
  });

  it('duration_seconds is rounded down; started_at is when recorded if the provider gave no start', async () => {
    w = await world(makeStore);
    await call(w, { line: 'own_line', direction: 'inbound', duration_seconds: 12.7 });
    expect(await w.record('call', `call_${n}`)).toMatchObject({
      duration_seconds: 12,
      started_at: AT,
      direction: 'inbound',
      lead: null,
    });
    await call(w, { line: 'own_line', started_at: '2026-01-12T09:30:00+01:00' });
    expect(await w.record('call', `call_${n}`)).toMatchObject({ started_at: AT, direction: null });
  });
});
