import { ApiError } from '../errors/catalogue.js';
import type { CursorCodec, CursorScope } from './cursor.js';

// The changes feed's cursor: a position in one team's feed plus the times the delivery contract
// needs (when that point was recorded, and when the initial sync began while it is still running).

export interface FeedPosition {
  /** Last feed position delivered (0 before the first item). */
  pos: number;
  /** Epoch ms of the point reached: the last delivered entry's `recordedAt`, or the start of the sync. */
  reachedAt: number;
  /** Epoch ms the initial sync started, while it still runs; null once it has caught up. */
  initialSyncStartedAt: number | null;
}

function scope(team: string): CursorScope {
  return { endpoint: 'sync.changes', team, filter: '' };
}

export function encodeFeedCursor(codec: CursorCodec, team: string, position: FeedPosition): string {
  const started = position.initialSyncStartedAt === null ? '' : String(position.initialSyncStartedAt);
  return codec.encode(scope(team), `${position.pos}.${position.reachedAt}.${started}`);
}

/** The position a feed cursor names; `400 invalid_request` (param `cursor`) when issued for another team or altered. */
export function decodeFeedCursor(codec: CursorCodec, team: string, cursor: string): FeedPosition {
  const parts = codec.decode(scope(team), cursor).split('.');
  const pos = Number(parts[0]);
  const reachedAt = Number(parts[1]);
  const started = parts[2] === '' || parts[2] === undefined ? null : Number(parts[2]);
  const valid =
    parts.length === 3 &&
    Number.isSafeInteger(pos) &&
    pos >= 0 &&
    Number.isSafeInteger(reachedAt) &&
    (started === null || Number.isSafeInteger(started));
  if (!valid) throw new ApiError('invalid_request', 'cursor');
  return { pos, reachedAt, initialSyncStartedAt: started };
}
