// The mirror's tables (documented in docs/mirror.md). Plain SQL works on them: one row per team, kind and
// id in `mirror_records` with the record's JSON, and one view per known kind with its main columns.
import { type Kysely, sql } from 'kysely';

export const MIRROR_DIALECTS = ['sqlite', 'postgres'] as const;
export type MirrorDialect = (typeof MIRROR_DIALECTS)[number];

export interface MirrorRecordsTable {
  team: string;
  kind: string;
  id: string;
  version: number;
  /** The lead a facet or activity belongs to, for the cascade on a lead's removal. */
  lead: string | null;
  updated_at: string | null;
  json: string;
  /** 0 while a full resync has not redelivered the record yet (mark and sweep). */
  marked: number;
}
export interface MirrorTombstonesTable {
  team: string;
  kind: string;
  id: string;
  version: number;
  reason: string;
  removed_at: string;
}
export interface MirrorContactPermissionsTable {
  team: string;
  lead: string;
  version: number;
  do_not_contact: number;
  email_opt_out: number;
  email_opt_out_at: string | null;
  whatsapp_consent: number | null;
  provenance: string;
}
export interface MirrorTeamsTable {
  team: string;
  cursor: string | null;
  cursor_saved_at: string | null;
  /** 1 while a full resync (mark and sweep) is under way. */
  resyncing: number;
  references_refreshed_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
}
export interface MirrorReferencesTable {
  team: string;
  kind: string;
  id: string;
  json: string;
  refreshed_at: string;
}
export interface MirrorUnresolvedTable {
  team: string;
  kind: string;
  id: string;
  first_seen_at: string;
  last_checked_at: string;
}
export interface MirrorLocksTable {
  key_hash: string;
  team: string;
  owner: string;
  heartbeat_at: string;
}

export interface MirrorDatabase {
  mirror_records: MirrorRecordsTable;
  mirror_tombstones: MirrorTombstonesTable;
  mirror_contact_permissions: MirrorContactPermissionsTable;
  mirror_teams: MirrorTeamsTable;
  mirror_references: MirrorReferencesTable;
  mirror_unresolved: MirrorUnresolvedTable;
  mirror_locks: MirrorLocksTable;
}

/** Main columns of each known kind's view; everything else stays in `json`. */
export const KIND_VIEW_COLUMNS = {
  lead: [
    'record_kind',
    'name',
    'surname',
    'email',
    'phone',
    'company',
    'status',
    'board',
    'stage',
    'priority',
    'source',
    'merged_into',
    'created_at',
  ],
  lead_attribution: ['original_capture_missing_reason', 'latest_submission_missing_reason'],
  lead_response: ['last_inbound_at', 'last_outbound_at', 'awaiting_reply', 'last_answered_call_at'],
  activity: ['lead', 'type', 'occurred_at', 'actor_kind'],
  call: ['lead', 'direction', 'started_at', 'duration_seconds', 'outcome', 'outcome_basis'],
  conversation: ['lead', 'channel', 'status', 'started_at', 'last_message_at', 'closed_at'],
  booking: ['lead', 'service', 'status', 'starts_at', 'ends_at', 'cancelled_at'],
  board: ['name', 'is_default', 'is_archived'],
} as const;

/** Plural view names, one per known feed kind. */
export const KIND_VIEWS: Record<keyof typeof KIND_VIEW_COLUMNS, string> = {
  lead: 'mirror_leads',
  lead_attribution: 'mirror_lead_attributions',
  lead_response: 'mirror_lead_responses',
  activity: 'mirror_activities',
  call: 'mirror_calls',
  conversation: 'mirror_conversations',
  booking: 'mirror_bookings',
  board: 'mirror_boards',
};

function extract(dialect: MirrorDialect, column: string): string {
  return dialect === 'sqlite' ? `json_extract(json, '$.${column}')` : `(json::jsonb)->>'${column}'`;
}

/** Creates the tables and views if they do not exist. Safe to run on every start. */
export async function migrateMirror(db: Kysely<MirrorDatabase>, dialect: MirrorDialect): Promise<void> {
  const text = 'text';
  const big = dialect === 'sqlite' ? 'integer' : 'bigint';
  const statements = [
    `create table if not exists mirror_records (team ${text} not null, kind ${text} not null, id ${text} not null,
      version ${big} not null, lead ${text}, updated_at ${text}, json ${text} not null, marked integer not null default 1,
      primary key (team, kind, id))`,
    'create index if not exists mirror_records_lead on mirror_records (team, lead)',
    // A page's versions are looked up by id across kinds (a lead and its facets share it): the primary key
    // (team, kind, id) cannot serve that, and without this index every page scans the team's rows.
    'create index if not exists mirror_records_id on mirror_records (team, id)',
    `create table if not exists mirror_tombstones (team ${text} not null, kind ${text} not null, id ${text} not null,
      version ${big} not null, reason ${text} not null, removed_at ${text} not null, primary key (team, kind, id))`,
    'create index if not exists mirror_tombstones_id on mirror_tombstones (team, id)',
    `create table if not exists mirror_contact_permissions (team ${text} not null, lead ${text} not null,
      version ${big} not null, do_not_contact integer not null, email_opt_out integer not null,
      email_opt_out_at ${text}, whatsapp_consent integer, provenance ${text} not null, primary key (team, lead))`,
    `create table if not exists mirror_teams (team ${text} primary key, cursor ${text}, cursor_saved_at ${text},
      resyncing integer not null default 0, references_refreshed_at ${text}, last_error ${text}, last_error_at ${text})`,
    `create table if not exists mirror_references (team ${text} not null, kind ${text} not null, id ${text} not null,
      json ${text} not null, refreshed_at ${text} not null, primary key (team, kind, id))`,
    `create table if not exists mirror_unresolved (team ${text} not null, kind ${text} not null, id ${text} not null,
      first_seen_at ${text} not null, last_checked_at ${text} not null, primary key (team, kind, id))`,
    `create table if not exists mirror_locks (key_hash ${text} not null, team ${text} not null, owner ${text} not null,
      heartbeat_at ${text} not null, primary key (key_hash, team))`,
  ];
  for (const [kind, columns] of Object.entries(KIND_VIEW_COLUMNS)) {
    const cols = columns.map((c) => `${extract(dialect, c)} as ${c}`).join(', ');
    const view = KIND_VIEWS[kind as keyof typeof KIND_VIEW_COLUMNS];
    statements.push(
      `create view if not exists_placeholder ${view} as select team, id, version, updated_at, ${cols}, json from mirror_records where kind = '${kind}'`,
    );
  }
  const known = Object.keys(KIND_VIEW_COLUMNS)
    .map((k) => `'${k}'`)
    .join(', ');
  statements.push(
    `create view if not exists_placeholder mirror_unknown_kinds as select team, kind, id, version, updated_at, json from mirror_records where kind not in (${known})`,
    `create view if not exists_placeholder mirror_members as select team, id, ${extract(dialect, 'display_name')} as display_name, json from mirror_references where kind = 'member'`,
    `create view if not exists_placeholder mirror_booking_services as select team, id, ${extract(dialect, 'name')} as name, ${extract(dialect, 'meeting_type')} as meeting_type, json from mirror_references where kind = 'booking_service'`,
  );
  for (const statement of statements) {
    // PostgreSQL has `create or replace view` but no `create view if not exists`; SQLite the reverse.
    const ddl = statement.replace(
      'create view if not exists_placeholder',
      dialect === 'sqlite' ? 'create view if not exists' : 'create or replace view',
    );
    await sql.raw(ddl).execute(db);
  }
}
