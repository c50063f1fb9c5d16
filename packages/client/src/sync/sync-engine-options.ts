// What a caller hands the sync engine: its options, and the shapes of the logs, progress and waits it reports.
import type { CrmExportClient } from '../client/crm-export-client.js';
import type { MirrorStore } from './mirror-store.js';
import type { SyncLockOptions } from './sync-lock.js';

export interface SyncLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface SyncProgress {
  team: string;
  /** Items delivered so far in this run for the team. */
  items: number;
  /** True while the team has no cursor yet or a full resync runs. */
  initial: boolean;
  hasMore: boolean;
}

/** Why and how long the engine waits before asking again (for a status line). */
export interface SyncWait {
  /** The team whose request waits; absent when the wait is for the whole key. */
  team?: string;
  /**
   * `items-minute` / `items-day`: pacing by the budget headers (the next request would not fit in what is
   * left); `rate_limited` / `quota_exceeded`: a 429 answered with Retry-After.
   */
  reason: 'items-minute' | 'items-day' | 'rate_limited' | 'quota_exceeded';
  waitMs: number;
  /** Items left in the budget (pacing only). */
  remaining?: number;
  /** Items the next request sets aside (pacing only). */
  needed?: number;
}

export interface SyncEngineOptions {
  client: CrmExportClient;
  store: MirrorStore;
  /** The API key, only to key the lock (a digest is stored, never the key). */
  key: string;
  /** Sync only this team (it must be listed by `/teams`). */
  team?: string;
  /** Stop once every team is caught up instead of polling. */
  once?: boolean;
  /** Wait between polls once caught up (the spec: 1 to 5 minutes). Default 60 s. */
  intervalMs?: number;
  /** Wait after `409 capture_not_ready` ("retry in a few minutes"). Default 3 minutes. */
  captureRetryMs?: number;
  /** Refresh boards, members and bookable services at least this often. Default one day. */
  referencesMaxAgeMs?: number;
  /** Feed page size; 100 is what the spec recommends for an initial sync. */
  pageLimit?: number;
  /** Consecutive transient failures (after the client's own retries) before giving up in `once` mode. */
  maxTransientFailures?: number;
  lock?: SyncLockOptions;
  logger?: SyncLogger;
  onProgress?: (p: SyncProgress) => void;
  /** Called whenever the engine waits for the key's item budget or a Retry-After. */
  onWait?: (w: SyncWait) => void;
  /** Aborting stops every team between pages; a page is committed whole or not at all. */
  signal?: AbortSignal;
}
