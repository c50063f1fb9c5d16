import pg from 'pg';
import { openSqliteFile } from '../support/sqlite-file.js';

// What a store holds, read with the database's own driver so that two stores can be compared whole:
// every record (version, removal, JSON), every feed entry in order, the quarantine and the ids applied.
// Times the service takes from its own clock (`updated_at`, the feed's recorded time) are left out: two
// runs never share them.

export interface StoreDump {
  records: { kind: string; id: string; version: number; removed: string | null; json: unknown }[];
  feed: { team: string; pos: number; kind: string; id: string; version: number; removed: string | null }[];
  quarantine: { seq: number; lane: string; code: string; attempts: number }[];
  ids: number;
  source: { last_seq: number; applied: number; duplicates: number; rejected: number; quarantined: number }[];
}

const QUERIES = {
  records: 'SELECT kind, id, version, removed, json FROM records ORDER BY kind, id',
  feed: 'SELECT team, pos, kind, id, version, removed FROM feed ORDER BY team, pos',
  quarantine: 'SELECT seq, lane, code, attempts FROM intake_quarantine ORDER BY source, seq',
  ids: 'SELECT count(*) AS n FROM intake_ids',
  source: 'SELECT last_seq, applied, duplicates, rejected, quarantined FROM intake_sources ORDER BY source',
};

/** The value with every `updated_at` key dropped, at any depth. */
function withoutClock(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutClock);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .filter(([key]) => key !== 'updated_at')
      .map(([key, v]) => [key, withoutClock(v)]),
  );
}

const json = (raw: unknown) =>
  raw === null ? null : withoutClock(typeof raw === 'string' || Buffer.isBuffer(raw) ? JSON.parse(String(raw)) : raw);
const numbers = <T extends Record<string, unknown>>(row: T, keys: readonly (keyof T)[]) => {
  const out: Record<string, unknown> = { ...row };
  for (const key of keys) out[key as string] = Number(row[key]);
  return out as T;
};

export async function dumpStore(url: string): Promise<StoreDump> {
  const rows: Record<keyof typeof QUERIES, Record<string, unknown>[]> = {
    records: [],
    feed: [],
    quarantine: [],
    ids: [],
    source: [],
  };
  if (url.startsWith('sqlite:')) {
    const db = openSqliteFile(url.slice('sqlite:'.length), { readonly: true });
    try {
      for (const [name, sql] of Object.entries(QUERIES)) {
        rows[name as keyof typeof QUERIES] = db.prepare(sql).all() as Record<string, unknown>[];
      }
    } finally {
      db.close();
    }
  } else {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      for (const [name, sql] of Object.entries(QUERIES)) {
        rows[name as keyof typeof QUERIES] = (await client.query(sql)).rows;
      }
    } finally {
      await client.end();
    }
  }
  return {
    records: rows.records.map((r) => ({
      ...numbers(r as StoreDump['records'][number], ['version']),
      json: json(r.json),
    })),
    feed: rows.feed.map((r) => numbers(r as StoreDump['feed'][number], ['pos', 'version'])),
    quarantine: rows.quarantine.map((r) => numbers(r as StoreDump['quarantine'][number], ['seq', 'attempts'])),
    ids: Number(rows.ids[0]?.n ?? 0),
    source: rows.source.map((r) =>
      numbers(r as StoreDump['source'][number], ['last_seq', 'applied', 'duplicates', 'rejected', 'quarantined']),
    ),
  };
}
