import pg from 'pg';

// The CRM's outbox table, read in id order (docs/intake.md, "The outbox table"). Nothing here writes to it.

/** The table the CRM creates, with the id default that takes a transaction id first (see `Horizon`). */
export function outboxDefinition(table = 'crm_export_outbox'): string {
  const index = `${table.split('.').pop()}_created_at`;
  return `CREATE TABLE ${table} (
  id bigserial PRIMARY KEY,
  event jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE FUNCTION ${table}_next_id() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_current_xact_id(); -- the transaction id first, then the outbox id
  RETURN nextval(pg_get_serial_sequence('${table}', 'id'));
END $$;
ALTER TABLE ${table} ALTER COLUMN id SET DEFAULT ${table}_next_id();
CREATE INDEX ${index} ON ${table} (created_at);`;
}

/** One outbox row: its id is the event's `seq`. */
export interface OutboxRow {
  id: number;
  event: unknown;
  createdAt: Date;
}

/**
 * A point after which every outbox id up to `bound` is final: `bound` was the sequence's last value, then
 * `xip` the transactions in progress in a snapshot taken after it.
 */
interface Horizon {
  bound: number;
  xip: string[];
}

/** Why the relay cannot use a table: the message names what to change. */
export class OutboxError extends Error {}

/** `schema.table` or `table`, each part quoted. */
const quoted = (name: string) =>
  name
    .split('.')
    .map((part) => `"${part}"`)
    .join('.');

/**
 * Reads the outbox without ever passing a row that may still commit.
 *
 * The rule (docs/intake.md, "Why no row is skipped"): ids are taken from a sequence when a transaction
 * inserts, and become visible when it commits, so a later id can be visible before an earlier one.
 * 1. Rows whose ids follow the position with no hole are final: no other id lies between them.
 * 2. At a hole, read the sequence's last value B, then (in a later statement, so after it) take a snapshot S.
 *    Every id <= B was taken before S, by a transaction that already had its transaction id (the table's id
 *    default takes one first): that transaction either ended before S or is in S's in-progress list. Once
 *    none of that list is still in progress, every id <= B is committed or never will be.
 * A plain `bigserial` default takes the id before the transaction id (nextval gives none), so a
 * transaction could take an id <= B yet be missing from S: `check()` refuses such a table.
 */
export class Outbox {
  private readonly pool: pg.Pool;
  private readonly table: string;
  private readonly name: string;
  private sequence = '';
  /** Every id up to this one is final. */
  private safe = 0;
  private horizon: Horizon | undefined;

  constructor(url: string, table: string) {
    this.name = table;
    this.table = quoted(table);
    this.pool = new pg.Pool({ connectionString: url, max: 1, application_name: 'crm-export relay' });
    // A lost connection fails the query at hand; the pool opens another for the next one.
    this.pool.on('error', () => undefined);
  }

  /** Checks the table, its sequence and its id default; throws an `OutboxError` saying what is wrong. */
  async check(): Promise<void> {
    const found = await this.pool.query<{ seq: string | null; fallback: string | null; cache: string | null }>(
      `SELECT pg_get_serial_sequence($1, 'id') AS seq,
              (SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a
                 ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                WHERE d.adrelid = to_regclass($1) AND a.attname = 'id') AS fallback,
              (SELECT s.seqcache::text FROM pg_sequence s
                WHERE s.seqrelid = to_regclass(pg_get_serial_sequence($1, 'id'))) AS cache`,
      [this.name],
    );
    const row = found.rows[0];
    if (!row?.seq) {
      throw new OutboxError(`${this.name} has no id column backed by a sequence (see docs/intake.md for the table)`);
    }
    if (row.fallback === null || /^nextval\(/.test(row.fallback)) {
      throw new OutboxError(
        `${this.name}.id takes its value with nextval alone, before the transaction has an id: a row could be skipped; set the default of docs/intake.md (${this.name}_next_id())`,
      );
    }
    if (row.cache !== null && Number(row.cache) > 1) {
      throw new OutboxError(`the sequence of ${this.name}.id caches ${row.cache} values per session: set CACHE 1`);
    }
    this.sequence = row.seq;
  }

  /**
   * Up to `limit` rows after `position`, in id order, stopping before the first one that could still be
   * preceded by a row not yet committed. Rows above `upTo` are never returned.
   */
  async read(position: number, limit: number, upTo = Number.MAX_SAFE_INTEGER): Promise<OutboxRow[]> {
    const rows = await this.rows(position, limit, upTo);
    let final = this.finalPrefix(position, rows);
    if (final.length < rows.length && (await this.advance())) {
      final = this.finalPrefix(position, await this.rows(position, limit, upTo));
    }
    return final;
  }

  /** Waits until every id allocated now is final (for `--once`); returns that bound. */
  async settle(sleep: (ms: number) => Promise<void>, pollMs: number): Promise<number> {
    this.horizon = await this.takeHorizon();
    const bound = this.horizon.bound;
    while (!(await this.advance())) await sleep(pollMs);
    return bound;
  }

  /**
   * Rows not yet relayed after `position`, the age in seconds of the oldest (0 when none), and the last id
   * the sequence gave (0 before the first).
   */
  async lag(position: number): Promise<{ rows: number; seconds: number; lastId: number }> {
    const result = await this.pool.query<{ rows: string; oldest: string | null; last: string | null }>(
      `SELECT (SELECT count(*) FROM (SELECT 1 FROM ${this.table} WHERE id > $1 LIMIT 1000000) s) AS rows,
              (SELECT extract(epoch FROM now() - created_at)::text FROM ${this.table} WHERE id > $1 ORDER BY id LIMIT 1) AS oldest,
              pg_sequence_last_value($2::regclass) AS last`,
      [position, this.sequence],
    );
    const row = result.rows[0];
    return {
      rows: Number(row?.rows ?? 0),
      seconds: Math.max(0, Number(row?.oldest ?? 0)),
      lastId: Number(row?.last ?? 0),
    };
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async rows(position: number, limit: number, upTo: number): Promise<OutboxRow[]> {
    const result = await this.pool.query<{ id: string; event: unknown; created_at: Date }>(
      `SELECT id, event, created_at FROM ${this.table} WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3`,
      [position, upTo, limit],
    );
    return result.rows.map((r) => ({ id: Number(r.id), event: r.event, createdAt: r.created_at }));
  }

  /** The rows that are final: each either at or below the safe bound, or the next id after the one before. */
  private finalPrefix(position: number, rows: OutboxRow[]): OutboxRow[] {
    let previous = position;
    let count = 0;
    for (const row of rows) {
      if (row.id > this.safe && row.id !== previous + 1) break;
      previous = row.id;
      count += 1;
    }
    return rows.slice(0, count);
  }

  /**
   * Moves the safe bound when the pending horizon has settled; takes a new horizon when none is pending.
   * True when the bound moved.
   */
  private async advance(): Promise<boolean> {
    this.horizon ??= await this.takeHorizon();
    if (this.horizon.xip.length > 0) {
      const running = await this.pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM unnest($1::xid8[]) x WHERE pg_xact_status(x) = 'in progress'`,
        [this.horizon.xip],
      );
      if (Number(running.rows[0]?.n) > 0) return false;
    }
    this.safe = Math.max(this.safe, this.horizon.bound);
    this.horizon = undefined;
    return true;
  }

  /** Two statements, in this order: the sequence's last value, then a snapshot taken after it was read. */
  private async takeHorizon(): Promise<Horizon> {
    const last = await this.pool.query<{ v: string | null }>('SELECT pg_sequence_last_value($1::regclass) AS v', [
      this.sequence,
    ]);
    const snapshot = await this.pool.query<{ xip: string[] | null }>(
      'SELECT array(SELECT pg_snapshot_xip(pg_current_snapshot())::text) AS xip',
    );
    return { bound: Number(last.rows[0]?.v ?? 0), xip: snapshot.rows[0]?.xip ?? [] };
  }
}
