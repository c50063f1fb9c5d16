/**
 * Events per transaction of `crm-export ingest` unless `--batch-size` says otherwise. Fewer, larger
 * transactions cost fewer statements and commits; past 2,000 nothing more was gained (docs/performance.md).
 */
export const DEFAULT_INGEST_BATCH = 2000;

/**
 * MiB of events (content dropped, as compact JSON) `ingest -` holds in memory while it validates
 * standard input, unless `--stdin-limit` says otherwise. Standard input is never copied to disk.
 */
export const DEFAULT_STDIN_LIMIT_MIB = 256;
