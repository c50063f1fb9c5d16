import {
  CompiledQuery,
  type Kysely,
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryResult,
  type RawBuilder,
} from 'kysely';
import pg from 'pg';
import type { Row } from '../sql/rows.js';
import { StoreUnavailableError, toStoreError } from '../unavailable.js';

// The store's pg pools. A pg client whose connection dies emits 'error'; with no listener that event ends
// the process. pg-pool listens only while a client is idle, so a connection lost under a running query
// (a terminated backend, a failover, idle_in_transaction_session_timeout) used to crash the service.
// Every client here has a listener for its whole life, attached when the pool opens it: the running query
// still fails with the driver's error, the pool drops the broken client when it is released (pg-pool
// never reuses a client that is no longer queryable) and the next call opens a new connection.

const statementNames = new Map<string, string>();

/**
 * The name a statement text is prepared under on every connection: PostgreSQL parses and plans it once per
 * connection instead of once per call. One name per text (the store's texts are a fixed set).
 */
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `crm_${statementNames.size + 1}`;
    statementNames.set(text, name);
  }
  return name;
}

/** A pg pool whose clients can never end the process with an 'error' event. */
export function listenedPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  // The failing query reports the loss; the event itself carries nothing more to act on.
  const ignore = () => undefined;
  pool.on('connect', (client) => client.on('error', ignore));
  // pg-pool re-emits an idle client's error on the pool.
  pool.on('error', ignore);
  return pool;
}

/**
 * The pool as Kysely's PostgreSQL driver sees it, with the driver's errors classified (unavailable.ts):
 * a temporary failure of opening a connection or of a statement rejects with `StoreUnavailableError`.
 * After `close()` every call rejects with the reason `closed`.
 */
export class ClassifiedPool implements PostgresPool {
  private closed = false;
  private readonly clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();

  constructor(private readonly pool: pg.Pool) {}

  async connect(): Promise<PostgresPoolClient> {
    if (this.closed) throw new StoreUnavailableError('closed');
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw toStoreError(error, 'connect');
    }
    let wrapped = this.clients.get(client);
    if (!wrapped) {
      // One wrapper per pg client, so Kysely keeps one connection object per client as it does without it.
      // A statement with parameters is named (prepared once per connection); transaction commands are not.
      const query = async (text: string, parameters: readonly unknown[]) => {
        const values = [...parameters];
        const config = values.length > 0 ? { name: statementName(text), text, values } : { text, values };
        try {
          return (await client.query(config)) as unknown as PostgresQueryResult<never>;
        } catch (error) {
          throw toStoreError(error, 'query');
        }
      };
      wrapped = { query, release: () => client.release() } as unknown as PostgresPoolClient;
      this.clients.set(client, wrapped);
    }
    return wrapped;
  }

  /** Marks the pool closed (later calls answer `closed`), then ends its connections. */
  async end(): Promise<void> {
    this.closed = true;
    await this.pool.end();
  }
}

/** The query builder over the classified pool, or one transaction of it. */
export type Db = Kysely<unknown>;

/** Runs one of the shared statements (statements.ts) on `db`, a transaction or the pool. */
export async function run(db: Db, text: string, values: unknown[]): Promise<Row[]> {
  return (await db.executeQuery<Row>(CompiledQuery.raw(text, values))).rows;
}

/** Runs a statement written in place with the query builder's `sql` tag. */
export async function rows(db: Db, query: RawBuilder<unknown>): Promise<Row[]> {
  return (await query.execute(db)).rows as Row[];
}
