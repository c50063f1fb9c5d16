import { type Static, Type } from 'typebox';
import { LEAD_STATUSES } from './enums.js';
import { Id, Record_, StringEnum } from './helpers.js';

// Query, path and body schemas. Closed objects: an unknown parameter is `400 invalid_request`.

/** The page size when a request sends no `limit`, and the largest it may ask for (the one definition). */
export const DEFAULT_PAGE_SIZE = 25;
export const MAX_PAGE_SIZE = 100;

export const Limit = Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE });
export const Cursor = Type.String({ minLength: 1, maxLength: 512 });

export const NoQuery = Record_({});
export const PageQuery = Record_({ limit: Type.Optional(Limit), cursor: Type.Optional(Cursor) });
export type PageQuery = Static<typeof PageQuery>;

export const LeadsQuery = Record_({
  limit: Type.Optional(Limit),
  cursor: Type.Optional(Cursor),
  board: Type.Optional(Id('board')),
  stage: Type.Optional(Id('stage')),
  status: Type.Optional(StringEnum(LEAD_STATUSES)),
});
export type LeadsQuery = Static<typeof LeadsQuery>;

/** `/calls`, `/conversations`, `/bookings`: paging plus an optional `lead` filter. */
export const ByLeadQuery = Record_({
  limit: Type.Optional(Limit),
  cursor: Type.Optional(Cursor),
  lead: Type.Optional(Id('lead')),
});
export type ByLeadQuery = Static<typeof ByLeadQuery>;

export const FeedQuery = Record_({ limit: Type.Optional(Limit), cursor: Type.Optional(Cursor) });
export type FeedQuery = Static<typeof FeedQuery>;

export const SearchBody = Record_(
  {
    email: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
    phone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    limit: Type.Optional(Limit),
    cursor: Type.Optional(Cursor),
  },
  { $id: 'LeadSearch' },
);
export type SearchBody = Static<typeof SearchBody>;

export function PathId(kind: Parameters<typeof Id>[0]) {
  return Record_({ id: Id(kind) });
}

export const ServiceTeamHeader = Type.Object({
  'service-team': Type.Optional(Id('team', 'the team whose data a request reads')),
});
