import { type Kysely, type Migration, sql } from 'kysely';

// Versioned schema of the PostgreSQL backend: the SQLite schema (../sqlite/migrations.ts) expressed for
// PostgreSQL, applied in order by Kysely's migrator on every start. Unqualified names: the store sets
// `search_path` to its schema on every connection. Stored JSON (`state`, `json`, `body`) stays `text`:
// the API sends it as stored, and `jsonb` would re-serialize it (key order, spacing) on every read.

const v1: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`CREATE TABLE entities (
      ord bigserial PRIMARY KEY,
      kind text NOT NULL,
      id text NOT NULL,
      team text,
      parent text,
      state text NOT NULL,
      UNIQUE (kind, id)
    )`.execute(db);
    await sql`CREATE INDEX entities_team ON entities (kind, team, ord)`.execute(db);
    await sql`CREATE INDEX entities_parent ON entities (kind, parent, ord)`.execute(db);

    await sql`CREATE TABLE records (
      seq bigserial PRIMARY KEY,
      kind text NOT NULL,
      id text NOT NULL,
      team text NOT NULL,
      lead text,
      board text,
      stage text,
      status text,
      email text,
      phone text,
      version integer NOT NULL,
      updated_at text NOT NULL,
      json text,
      removed text,
      UNIQUE (kind, id)
    )`.execute(db);
    // Partial indexes over live rows only: every list is a keyset walk over one of these.
    await sql`CREATE INDEX records_team ON records (team, kind, seq) WHERE removed IS NULL`.execute(db);
    await sql`CREATE INDEX records_board ON records (team, kind, board, seq) WHERE removed IS NULL`.execute(db);
    await sql`CREATE INDEX records_stage ON records (team, kind, stage, seq) WHERE removed IS NULL`.execute(db);
    await sql`CREATE INDEX records_status ON records (team, kind, status, seq) WHERE removed IS NULL`.execute(db);
    await sql`CREATE INDEX records_lead ON records (team, kind, lead, seq) WHERE removed IS NULL`.execute(db);
    await sql`CREATE INDEX records_email ON records (team, email) WHERE removed IS NULL AND email IS NOT NULL`.execute(
      db,
    );
    await sql`CREATE INDEX records_phone ON records (team, phone) WHERE removed IS NULL AND phone IS NOT NULL`.execute(
      db,
    );

    await sql`CREATE TABLE feed (
      team text NOT NULL,
      pos bigint NOT NULL,
      kind text NOT NULL,
      id text NOT NULL,
      version integer NOT NULL,
      recorded_at bigint NOT NULL,
      body text,
      removed text,
      PRIMARY KEY (team, pos)
    )`.execute(db);
    await sql`CREATE INDEX feed_record ON feed (kind, id, pos)`.execute(db);
    await sql`CREATE INDEX feed_recorded ON feed (recorded_at)`.execute(db);
    // One row per team: its row lock is what orders a team's feed by commit (docs/feed-order.md).
    await sql`CREATE TABLE feed_heads (team text PRIMARY KEY, last_pos bigint NOT NULL)`.execute(db);
    await sql`CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)`.execute(db);
  },
};

// Retention deletes expired removals in batches, oldest first: this index finds them without walking the
// live entries (most of the feed) that feed_recorded would pass over on every batch. Small (removals only).
const v2: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`CREATE INDEX feed_removals ON feed (recorded_at) WHERE removed IS NOT NULL`.execute(db);
  },
};

// The operators' audit trail (`crm-export admin audit list`): ids and settings only, never a key or personal
// data. `target` holds the ids comma separated; `details` is JSON. Never trimmed by the service.
const v3: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`CREATE TABLE audit (
      seq bigserial PRIMARY KEY,
      at text NOT NULL,
      actor text NOT NULL,
      action text NOT NULL,
      target text NOT NULL,
      outcome text NOT NULL,
      details text NOT NULL
    )`.execute(db);
    await sql`CREATE INDEX audit_at ON audit (at)`.execute(db);
  },
};

// Compact storage (docs/feed.md, "What is stored"). A feed entry of its record's current version stores no
// body of its own: reads take the record row's JSON, and an entry gets its own copy only when its record
// moves on to a newer version. Existing entries that duplicate their record's row drop their copy here.
// Index entries only for rows a filter can match: the board, stage, status and lead indexes skip rows
// whose column is null (a lead has no lead column, a call no board), and feed_recorded, which no query
// reads since retention has its own indexes, goes.
const v4: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`UPDATE feed f SET body = NULL FROM records r
      WHERE f.removed IS NULL AND f.body IS NOT NULL AND r.kind = f.kind AND r.id = f.id AND r.version = f.version
      AND r.json = f.body`.execute(db);
    await sql`DROP INDEX feed_recorded`.execute(db);
    for (const column of ['board', 'stage', 'status', 'lead']) {
      await sql`DROP INDEX ${sql.raw(`records_${column}`)}`.execute(db);
      await sql`CREATE INDEX ${sql.raw(`records_${column}`)} ON records (team, kind, ${sql.raw(column)}, seq)
        WHERE removed IS NULL AND ${sql.raw(column)} IS NOT NULL`.execute(db);
    }
  },
};

export const POSTGRES_MIGRATIONS: Record<string, Migration> = {
  '0001_initial': v1,
  '0002_feed_removals': v2,
  '0003_audit': v3,
  '0004_compact_storage': v4,
};
