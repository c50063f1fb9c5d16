import pg from 'pg';
import { outboxDefinition } from '../../src/relay/outbox.js';
import { uniqueSchema } from '../support/postgres.js';

// The CRM's side of a relay test: a schema of its own in the test database holding the documented outbox
// table, and connections that insert rows as the CRM would, each in its own transaction.

export interface CrmOutbox {
  /** The table as the relay names it: `schema.crm_export_outbox`. */
  table: string;
  url: string;
  /** Inserts each event in one committed transaction; returns the ids. */
  insert(...events: Record<string, unknown>[]): Promise<number[]>;
  /** A transaction left open after inserting `event`: commit or roll it back later. */
  open(event: Record<string, unknown>): Promise<{ id: number; commit(): Promise<void>; rollback(): Promise<void> }>;
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  drop(): Promise<void>;
}

export async function makeCrmOutbox(url: string, { definition = outboxDefinition } = {}): Promise<CrmOutbox> {
  const schema = uniqueSchema();
  const table = `${schema}.crm_export_outbox`;
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  await pool.query(`CREATE SCHEMA ${schema}`);
  await pool.query(definition(table));
  const insertSql = `INSERT INTO ${table} (event) VALUES ($1) RETURNING id`;
  return {
    table,
    url,
    insert: async (...events) => {
      const ids: number[] = [];
      for (const event of events) ids.push(Number((await pool.query(insertSql, [event])).rows[0].id));
      return ids;
    },
    open: async (event) => {
      const client = await pool.connect();
      await client.query('BEGIN');
      const id = Number((await client.query(insertSql, [event])).rows[0].id);
      const end = async (sql: string) => {
        await client.query(sql);
        client.release();
      };
      return { id, commit: () => end('COMMIT'), rollback: () => end('ROLLBACK') };
    },
    query: (text, values) => pool.query(text, values),
    drop: async () => {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    },
  };
}
