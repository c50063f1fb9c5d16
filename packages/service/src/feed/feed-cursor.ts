import type { CursorCodec, CursorScope } from '../cursor-codec.js';
import { ApiError } from '../errors/catalogue.js';

// The changes feed's cursor: the feed epoch it was issued in, a position in one team's feed, and the
// times the delivery contract needs. Signed by the shared `CursorCodec` and bound to the team through
// the MAC's scope, so a cursor sent with another team fails verification (400 invalid_request).

export interface FeedPosition {
  /** The feed epoch the cursor was issued in; a restore mark starts a new one (409 resync_required). */
  epoch: string;
  /** Last feed position delivered (0 before the first item). */
  pos: number;
  /** Epoch ms of the point in the feed reached; the cursor expires `cursorLifetimeMs` after it. */
  reachedAt: number;
  /** Epoch ms the initial sync started, while it still runs (it then governs expiry); null once caught up. */
  initialSyncStartedAt: number | null;
}

/** The database's epoch, and an example team's sandbox token after a dash (access/sandbox.ts). */
const EPOCH = /^[0-9A-Za-z]{1,32}(?:-[0-9A-Za-z]{1,32})?$/;

function scope(team: string): CursorScope {
  return { endpoint: 'sync.changes', team, filter: '' };
}

export function encodeFeedCursor(codec: CursorCodec, team: string, p: FeedPosition): string {
  const started = p.initialSyncStartedAt === null ? '' : String(p.initialSyncStartedAt);
  return codec.encode(scope(team), `${p.epoch}.${p.pos}.${p.reachedAt}.${started}`);
}

/** The position a feed cursor names; `400 invalid_request` (param `cursor`) when issued for another team or altered. */
export function decodeFeedCursor(codec: CursorCodec, team: string, cursor: string): FeedPosition {
  const parts = codec.decode(scope(team), cursor).split('.');
  const [epoch = '', posText = '', reachedText = '', startedText = ''] = parts;
  const pos = Number(posText);
  const reachedAt = Number(reachedText);
  const started = startedText === '' ? null : Number(startedText);
  const valid =
    parts.length === 4 &&
    EPOCH.test(epoch) &&
    posText !== '' &&
    Number.isSafeInteger(pos) &&
    pos >= 0 &&
    reachedText !== '' &&
    Number.isSafeInteger(reachedAt) &&
    (started === null || Number.isSafeInteger(started));
  if (!valid) throw new ApiError('invalid_request', { param: 'cursor' });
  return { epoch, pos, reachedAt, initialSyncStartedAt: started };
}
