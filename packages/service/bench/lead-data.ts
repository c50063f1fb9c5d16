import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Store } from '../src/store/store.js';
import type { CrmEvent } from '../src/write/events/events.js';
import { Crm, createIntegration, PostgresStore, SqliteStore, systemClock } from './service.js';

// Bench data: one team of N leads written through the write side (Crm.applyBatch, like ingest and the
// demo), plus an integration whose key reads the team. Generated once and cached under .bench/ (SQLite
// files; PostgreSQL schemas in their own database), so reruns reuse it.

export const BENCH_TEAM = 'team_Bench';
export const CACHE_DIR = fileURLToPath(new URL('../.bench/', import.meta.url));
/** Where PostgreSQL bench data goes: its own database beside the tests' one. */
export const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const PG_BENCH_DB = 'crm_export_bench';

const LEADS_PER_BATCH = 2_000;
const AT = '2026-01-10T10:00:00.000Z';
const STATUSES = ['new', 'contacted', 'qualified', 'negotiating', 'lost'] as const;
const PRIORITIES = ['low', 'medium', 'high', 'urgent'] as const;
const COMPANIES = ['Acme GmbH', 'Globex', 'Initech', null] as const;

export interface LeadData {
  /** Database URL a server opens (`sqlite:PATH` or `postgres://...`). */
  url: string;
  /** PostgreSQL schema holding the data (none for SQLite). */
  schema?: string;
  leads: number;
  /** The integration's secret key; lives only in the gitignored cache. */
  key: string;
  /** Time spent generating, and the rate, from when the data was built (maybe an earlier run). */
  generatedSeconds: number;
  leadsPerSecond: number;
}

interface CacheInfo {
  key: string;
  generatedSeconds: number;
}

/** A client-like lead with every exported field of a typical CRM lead filled in. */
function leadEvent(i: number): CrmEvent {
  return {
    type: 'lead.created',
    at: AT,
    team: BENCH_TEAM,
    lead: `lead_B${i}`,
    status: STATUSES[i % STATUSES.length] ?? 'new',
    name: 'Ada',
    surname: `Lovelace${i}`,
    email: `ada.lovelace${i}@example.com`,
    company: COMPANIES[i % COMPANIES.length] ?? null,
    phone: `+4930${String(1_000_000 + (i % 9_000_000)).padStart(8, '0')}`,
    priority: PRIORITIES[i % PRIORITIES.length] ?? null,
    tags: i % 3 === 0 ? ['lead', 'booking'] : ['lead'],
    estimated_value: (i % 50) * 100,
    source: 'website_form',
    source_channel: 'widget',
  };
}

async function fill(store: Store, leads: number, label: string): Promise<{ key: string; generatedSeconds: number }> {
  const crm = new Crm(store, systemClock);
  await crm.applyBatch([
    { type: 'organization.upsert', at: AT, organization: 'orgBench', name: 'Bench', plan: 'api_included' },
    { type: 'team.upsert', at: AT, team: BENCH_TEAM, organization: 'orgBench', name: 'Bench', captured_at: AT },
  ]);
  const started = performance.now();
  for (let done = 0; done < leads; done += LEADS_PER_BATCH) {
    const batch: CrmEvent[] = [];
    for (let i = done; i < Math.min(leads, done + LEADS_PER_BATCH); i++) batch.push(leadEvent(i));
    await crm.applyBatch(batch);
    const elapsed = (performance.now() - started) / 1000;
    const written = Math.min(leads, done + LEADS_PER_BATCH);
    process.stderr.write(`\r${label}: ${written}/${leads} leads, ${Math.round(written / elapsed)} leads/s   `);
  }
  const generatedSeconds = (performance.now() - started) / 1000;
  process.stderr.write(`done in ${generatedSeconds.toFixed(0)} s\n`);
  const { key } = await createIntegration(store, systemClock, { teams: [BENCH_TEAM], name: 'bench' });
  return { key, generatedSeconds };
}

function fromCache(url: string, leads: number, info: CacheInfo): LeadData {
  return { url, leads, ...info, leadsPerSecond: leads / info.generatedSeconds };
}

/** SQLite file of `leads` leads under .bench/, built on first use. */
export async function sqliteLeads(leads: number): Promise<LeadData> {
  const path = `${CACHE_DIR}leads-${leads}.db`;
  const infoPath = `${CACHE_DIR}leads-${leads}.json`;
  if (existsSync(path) && existsSync(infoPath)) {
    return fromCache(`sqlite:${path}`, leads, JSON.parse(readFileSync(infoPath, 'utf8')) as CacheInfo);
  }
  mkdirSync(CACHE_DIR, { recursive: true });
  const building = `${path}.building`;
  for (const suffix of ['', '-wal', '-shm']) rmSync(building + suffix, { force: true });
  const store = new SqliteStore({ path: building });
  await store.migrate();
  const info = await fill(store, leads, `SQLite ${leads} leads`);
  await store.close();
  renameSync(building, path);
  writeFileSync(infoPath, JSON.stringify(info));
  return fromCache(`sqlite:${path}`, leads, info);
}

/** The bench database's URL, creating the database on first use. */
export async function pgBenchUrl(): Promise<string> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [PG_BENCH_DB]);
    if (found.rowCount === 0) await admin.query(`CREATE DATABASE ${PG_BENCH_DB}`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${PG_BENCH_DB}`;
  return url.toString();
}

/** A PostgreSQL schema `leads_N` of `leads` leads in the bench database, built on first use. */
export async function postgresLeads(leads: number): Promise<LeadData> {
  const baseUrl = await pgBenchUrl();
  const schema = `leads_${leads}`;
  const infoPath = `${CACHE_DIR}pg-leads-${leads}.json`;
  // The cache file names a schema that a finished build left; a half-built one is dropped and redone.
  if (existsSync(infoPath)) {
    const info = JSON.parse(readFileSync(infoPath, 'utf8')) as CacheInfo;
    if (await hasIntegration(baseUrl, schema)) {
      await analyze(baseUrl, schema);
      return { ...fromCache(baseUrl, leads, info), schema };
    }
  }
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
  const store = new PostgresStore({ url: baseUrl, schema });
  await store.migrate();
  const info = await fill(store, leads, `PostgreSQL ${leads} leads`);
  await store.close();
  await analyze(baseUrl, schema);
  mkdirSync(CACHE_DIR, { recursive: true });
  writeFileSync(infoPath, JSON.stringify(info));
  return { ...fromCache(baseUrl, leads, info), schema };
}

/**
 * Planner statistics for the bench schema, as autovacuum would have them on a server in service: without
 * them PostgreSQL guesses a handful of rows per team and scans a team's whole feed for a page.
 */
async function analyze(baseUrl: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    for (const table of ['entities', 'records', 'feed', 'feed_heads']) await client.query(`ANALYZE ${schema}.${table}`);
  } finally {
    await client.end();
  }
}

async function hasIntegration(baseUrl: string, schema: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    const result = await client.query(
      `SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'entities'`,
      [schema],
    );
    if (result.rowCount === 0) return false;
    const integration = await client.query(`SELECT 1 FROM ${schema}.entities WHERE kind = 'integration' LIMIT 1`);
    return (integration.rowCount ?? 0) > 0;
  } finally {
    await client.end();
  }
}
