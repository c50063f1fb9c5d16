/**
 * Events per transaction of `crm-export ingest` unless `--batch-size` says otherwise. Fewer, larger
 * transactions cost fewer statements and commits: 2,000 ingested about 12 % faster than 500 on PostgreSQL
 * and 20 % on SQLite (docs/performance.md); 5,000 gained nothing more.
 */
export const DEFAULT_INGEST_BATCH = 2000;

/**
 * MiB of events (content dropped, as compact JSON) `ingest -` holds in memory while it validates
 * standard input, unless `--stdin-limit` says otherwise. Standard input is never copied to disk.
 */
export const DEFAULT_STDIN_LIMIT_MIB = 256;
