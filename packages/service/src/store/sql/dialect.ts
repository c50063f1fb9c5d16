// Where SQLite and PostgreSQL differ, and nowhere else. Statements, migrations and row mapping are written
// once (statements.ts, migrations.ts, rows.ts) in SQLite's spelling with `?` or named placeholders
// (named-statement.ts); each difference is one named fragment below, SQLite's spelling first,
// PostgreSQL's second. A new backend adds a column.

export type Backend = 'sqlite' | 'postgres';

const FRAGMENTS = {
  /** Migrations: a table's own key, numbered on insert (`seq`, `ord`). */
  serialKey: ['INTEGER PRIMARY KEY', 'bigserial PRIMARY KEY'],
  /**
   * A new record's list position. SQLite keeps records in list order under a key it cannot number itself,
   * so a counter in `meta` gives the next (migration 0011). Before that migration there is no counter: the
   * null lets the rowid number the row. PostgreSQL's column numbers itself.
   */
  newRecordSeq: [`(SELECT CAST(value AS INTEGER) + 1 FROM meta WHERE key = 'last_record_seq')`, 'DEFAULT'],
  /** Migrations: column types. SQLite has one integer type; PostgreSQL positions and times are bigint. */
  text: ['TEXT', 'text'],
  integer: ['INTEGER', 'integer'],
  bigint: ['INTEGER', 'bigint'],
  /**
   * A page's JSON joined by the database into one value: a BLOB on SQLite (bytes, no string built in
   * JavaScript), text on PostgreSQL. SQLite calls an aggregate's input order arbitrary, even over an
   * ordered subquery, and an ORDER BY inside the aggregate sorts the page's bodies once more (a large share of
   * the statement's time). So SQLite joins without it and also returns the positions in the order it
   * joined them (`joinedOrder`; every aggregate of a row sees its input in one order): the store checks them
   * and reads an out-of-order page again with `joinedJsonSorted`. PostgreSQL sorts within the aggregate.
   */
  joinedJson: [`CAST(group_concat(json, ',') AS BLOB)`, `string_agg(json, ',' ORDER BY seq)`],
  joinedJsonSorted: [`CAST(group_concat(json, ',' ORDER BY seq) AS BLOB)`, `string_agg(json, ',' ORDER BY seq)`],
  joinedOrder: ['group_concat(seq)', 'NULL'],
  /** Rows in a page, as a JavaScript number (PostgreSQL's count is bigint, which pg returns as a string). */
  pageCount: ['count(*)', 'count(*)::int'],
  /** Id of a page's last row: SQLite takes a bare column beside max() from the row holding the max. */
  lastId: ['id', '(array_agg(id ORDER BY seq DESC))[1]'],
  /** Recording time of a feed page's last entry, taken beside max() as `lastId` is. */
  lastRecordedAt: ['recorded_at', '(array_agg(recorded_at ORDER BY seq DESC))[1]'],
  /**
   * Put before a column so that its condition is not used to pick an index. SQLite, without statistics,
   * would walk a team's whole kind in the records' key rather than look up a lead, board or stage.
   */
  noIndex: ['+', ''],
  /** PostgreSQL wants every subquery in FROM named. */
  pageAlias: ['', ' s'],
  /** Position of one string in another (1-based, 0 when absent). */
  position: ['instr', 'strpos'],
  /** The larger of two values (SQLite's max() with two arguments is the scalar one). */
  larger: ['max', 'greatest'],
  /** Row locks of a write transaction's reads: SQLite's single writer needs none. */
  forUpdate: ['', ' FOR UPDATE'],
  /** A row's physical address, for batches of retention that delete what they selected. */
  rowAddress: ['rowid', 'ctid'],
  /**
   * The key retention walks the whole feed by, in windows: SQLite's rowid keeps each window's deletes on
   * neighbouring pages (in (team, pos) order they spread over the file);
   * PostgreSQL's ctid is no stable order, so there the primary key.
   */
  windowKey: ['rowid', 'team, pos'],
  /** Rows whose address is among a subquery's: a TID scan on PostgreSQL (a join let it scan the table). */
  addressIn: ['rowid IN (', 'ctid = ANY(ARRAY('],
  addressInEnd: [')', '))'],
  /**
   * A LIMIT bound per call; its placeholder follows. SQLite 3.53 (as better-sqlite3 builds it) plans with the
   * value of a bare `LIMIT ?`, so every new binding marks the statement stale and the next step prepares it
   * again: every page was prepared anew, which cost more than running it. Any expression around the
   * parameter keeps the plan; unary plus changes no value.
   */
  limit: ['LIMIT +', 'LIMIT '],
  /** The items of a JSON array passed as one value, as rows (a list of ids in one prepared statement). */
  jsonArrayItems: ['SELECT value FROM json_each(?)', 'SELECT json_array_elements_text(?::json)'],
  /** Whether the migrator's table exists (a database nothing was applied to has none). */
  migrationTable: [
    `SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = 'kysely_migration'`,
    `SELECT 1 AS present WHERE to_regclass('kysely_migration') IS NOT NULL`,
  ],
} as const satisfies Record<string, readonly [string, string]>;

export type Dialect = { readonly [K in keyof typeof FRAGMENTS]: string } & { readonly backend: Backend };

function dialectOf(backend: Backend): Dialect {
  const column = backend === 'sqlite' ? 0 : 1;
  const entries = Object.entries(FRAGMENTS).map(([name, spellings]) => [name, spellings[column]]);
  return { ...Object.fromEntries(entries), backend } as Dialect;
}

export const SQLITE: Dialect = dialectOf('sqlite');
export const POSTGRES: Dialect = dialectOf('postgres');

/**
 * A statement's text for PostgreSQL: each `?` becomes `$1`, `$2`... in order. Statements here never hold a
 * `?` inside a string literal, so none is skipped.
 */
export function numberedPlaceholders(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}
