import type { CallOutcome, OutcomeBasis } from '../../schemas/enums.js';
import type { CallState } from '../types.js';

/** Seconds a call on a connected PBX must last to count as answered (the spec's answered-call floor). */
export const DEFAULT_ANSWERED_CALL_FLOOR_SECONDS = 10;

const CARRIER_OUTCOME = { answered: 'unknown', no_answer: 'no_answer', busy: 'busy', failed: 'failed' } as const;

/**
 * A call's outcome and the evidence it rests on, per line type. The carrier only knows a line was
 * picked up, not by whom, so "answered" from the carrier alone reads `unknown`.
 */
export function callOutcome(
  call: CallState,
  floorSeconds = DEFAULT_ANSWERED_CALL_FLOOR_SECONDS,
): { outcome: CallOutcome; basis: OutcomeBasis } {
  if (call.live) return { outcome: 'unknown', basis: 'none' };
  const carrier: CallOutcome = call.carrierResult ? CARRIER_OUTCOME[call.carrierResult] : 'unknown';
  switch (call.line) {
    case 'own_line':
      if (call.direction === 'inbound' && call.verdict) return { outcome: call.verdict, basis: 'inbound_verdict' };
      return { outcome: carrier, basis: 'carrier_answer_only' };
    case 'voice_platform':
      return { outcome: call.verdict ?? carrier, basis: 'ai_analysis' };
    case 'pbx': {
      if (call.durationSeconds !== null && call.durationSeconds >= floorSeconds) {
        return { outcome: 'answered_human', basis: 'duration_floor' };
      }
      if (call.carrierResult === 'busy' || call.carrierResult === 'failed') {
        return { outcome: call.carrierResult, basis: 'duration_floor' };
      }
      return { outcome: call.durationSeconds === null ? 'unknown' : 'no_answer', basis: 'duration_floor' };
    }
    case 'browser_session':
      // A member speaks from the browser, so a connected session was answered by a person.
      return {
        outcome: call.verdict ?? (call.carrierResult === 'answered' ? 'answered_human' : carrier),
        basis: 'browser_session',
      };
  }
}
