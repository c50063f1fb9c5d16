import type { CursorCodec, CursorScope } from '../cursor-codec.js';
import { ApiError } from '../errors/catalogue.js';

// List cursors: the keyset position of a list page, signed by the cursor codec for the list's scope.

/** Keyset position of a list cursor: the last `seq` returned and, where a check needs it, that record's id. */
export interface ListPosition {
  seq: number;
  id: string;
}

export function encodeListCursor(codec: CursorCodec, scope: CursorScope, position: ListPosition): string {
  return codec.encode(scope, `${position.seq}.${position.id}`);
}

export function decodeListCursor(codec: CursorCodec, scope: CursorScope, cursor: string): ListPosition {
  const payload = codec.decode(scope, cursor);
  const dot = payload.indexOf('.');
  const seq = Number(payload.slice(0, dot));
  if (dot < 1 || !Number.isSafeInteger(seq) || seq < 0) throw new ApiError('invalid_request', { param: 'cursor' });
  return { seq, id: payload.slice(dot + 1) };
}
