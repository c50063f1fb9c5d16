import { type Static, type TSchema, Type } from 'typebox';
import { FEED_KINDS, REMOVAL_REASONS } from './enums.js';
import { Nullable, Record_, StringEnum } from './helpers.js';
import { Activity, Board, Booking, Call, Conversation, Lead, LeadAttribution, LeadResponse } from './records.js';

/** The list envelope every list endpoint answers with. */
export function ListOf<T extends TSchema>(item: T, $id: string) {
  return Record_(
    {
      object: Type.Literal('list'),
      data: Type.Array(item),
      has_more: Type.Boolean(),
      next_cursor: Nullable(Type.String({ minLength: 1, maxLength: 512 })),
    },
    { $id },
  );
}

const feedCommon = {
  id: Type.String({ pattern: '^(lead|act|call|conv|bkg|brd)_[0-9A-Za-z]+$' }),
  version: Type.Integer({ minimum: 1 }),
};

function RecordItem<K extends string, T extends TSchema>(kind: K, object: T) {
  return Record_({ kind: Type.Literal(kind), ...feedCommon, object });
}

/** A feed item carries exactly one of `object` (a record item) and `removed` (a removal). */
export const FeedRemoval = Record_({
  kind: StringEnum(FEED_KINDS),
  ...feedCommon,
  removed: Record_({ reason: StringEnum(REMOVAL_REASONS) }),
});
export const FeedItem = Type.Union(
  [
    RecordItem('lead', Lead),
    RecordItem('lead_attribution', LeadAttribution),
    RecordItem('lead_response', LeadResponse),
    RecordItem('activity', Activity),
    RecordItem('call', Call),
    RecordItem('conversation', Conversation),
    RecordItem('booking', Booking),
    RecordItem('board', Board),
    FeedRemoval,
  ],
  { $id: 'FeedItem' },
);
export type FeedItem = Static<typeof FeedItem>;

/** The feed page: like a list, but `next_cursor` is always a string. */
export const FeedPage = Record_(
  {
    object: Type.Literal('list'),
    data: Type.Array(FeedItem),
    has_more: Type.Boolean(),
    next_cursor: Type.String({ minLength: 1, maxLength: 512 }),
  },
  { $id: 'FeedPage' },
);
export type FeedPage = Static<typeof FeedPage>;

/** RFC 9457 problem body; `param` only when one header, query parameter or body field is at fault. */
export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String(),
    request_id: Type.String({ pattern: '^req_[0-9a-f-]{36}$' }),
    param: Type.Optional(Type.String()),
    doc_url: Type.String(),
  },
  { additionalProperties: false, $id: 'Problem' },
);
export type Problem = Static<typeof Problem>;
