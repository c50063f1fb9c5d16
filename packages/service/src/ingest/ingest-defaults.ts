/** Events per transaction of `crm-export ingest` unless `--batch-size` says otherwise. */
export const DEFAULT_INGEST_BATCH = 500;
