import { type Kysely, type Migration, sql } from 'kysely';

// Versioned schema of the SQLite backend, applied in order by Kysely's migrator on every start.

const v1: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`CREATE TABLE entities (
      ord INTEGER PRIMARY KEY,
      kind TEXT NOT NULL,
      id TEXT NOT NULL,
      team TEXT,
      parent TEXT,
      state TEXT NOT NULL,
      UNIQUE (kind, id)
    )`.execute(db);
    await sql`CREATE INDEX entities_team ON entities (kind, team, ord)`.execute(db);
    await sql`CREATE INDEX entities_parent ON entities (kind, parent, ord)`.execute(db);

    await sql`CREATE TABLE records (
      seq INTEGER PRIMARY KEY,
      kind TEXT NOT NULL,
      id TEXT NOT NULL,
      team TEXT NOT NULL,
      lead TEXT,
      board TEXT,
      stage TEXT,
      status TEXT,
      email TEXT,
      phone TEXT,
      version INTEGER NOT NULL,
      updated_at TEXT NOT NULL,
      json TEXT,
      removed TEXT,
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
      team TEXT NOT NULL,
      pos INTEGER NOT NULL,
      kind TEXT NOT NULL,
      id TEXT NOT NULL,
      version INTEGER NOT NULL,
      recorded_at INTEGER NOT NULL,
      body TEXT,
      removed TEXT,
      PRIMARY KEY (team, pos)
    )`.execute(db);
    await sql`CREATE INDEX feed_record ON feed (kind, id, pos)`.execute(db);
    await sql`CREATE INDEX feed_recorded ON feed (recorded_at)`.execute(db);
    await sql`CREATE TABLE feed_heads (team TEXT PRIMARY KEY, last_pos INTEGER NOT NULL)`.execute(db);
    await sql`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`.execute(db);
  },
};

// Retention deletes expired removals in batches, oldest first: this index finds them without walking the
// live entries (most of the feed) that feed_recorded would pass over on every batch.
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
      seq INTEGER PRIMARY KEY,
      at TEXT NOT NULL,
      actor TEXT NOT NULL,
      action TEXT NOT NULL,
      target TEXT NOT NULL,
      outcome TEXT NOT NULL,
      details TEXT NOT NULL
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
    await sql`UPDATE feed SET body = NULL WHERE removed IS NULL AND body IS NOT NULL AND EXISTS (
      SELECT 1 FROM records r WHERE r.kind = feed.kind AND r.id = feed.id AND r.version = feed.version
      AND r.json = feed.body)`.execute(db);
    await sql`DROP INDEX feed_recorded`.execute(db);
    for (const column of ['board', 'stage', 'status', 'lead']) {
      await sql`DROP INDEX ${sql.raw(`records_${column}`)}`.execute(db);
      await sql`CREATE INDEX ${sql.raw(`records_${column}`)} ON records (team, kind, ${sql.raw(column)}, seq)
        WHERE removed IS NULL AND ${sql.raw(column)} IS NOT NULL`.execute(db);
    }
  },
};

export const SQLITE_MIGRATIONS: Record<string, Migration> = {
  '0001_initial': v1,
  '0002_feed_removals': v2,
  '0003_audit': v3,
  '0004_compact_storage': v4,
};
