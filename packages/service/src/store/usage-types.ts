// What the request log, the usage counts and the last uses store and return (migration 0008_request_log,
// docs/request-log.md). Written in batches by `Store.appendUsage`, trimmed by `Store.trimUsage`, read by
// the functions of usage/usage-reads.ts. Plain data, the same on every backend. No row holds a key, a cursor,
// a search criterion or record content: only ids, the route template, status, code, counts and an address.

/** One answered request of the request log. */
export interface RequestLogRow {
  /** Epoch ms the request arrived. */
  at: number;
  /** The integration whose key was presented ('' when none could be named). */
  integration: string;
  /** The id the API answered with (`Service-Request-Id`). */
  requestId: string;
  method: string;
  /** The route template (`/v1/leads/:id`), never the URL. */
  route: string;
  status: number;
  /** The error code answered (a problem body's `code`, or the firewall's refusal); null for a success. */
  code: string | null;
  /** Items the answer returned. */
  items: number;
  /** The client address the API saw (after trusted proxies). */
  address: string;
}

/** A stored request log row with its position (newest first when read). */
export interface StoredRequestLogRow extends RequestLogRow {
  seq: number;
}

/**
 * Requests and items of one integration in one hour, one route and one outcome, added up over every process.
 * `reason` is '' for a success, else why the request failed (the error code, `locked_out` for a lockout).
 */
export interface UsageCount {
  integration: string;
  /** Epoch ms of the hour's start (UTC). */
  hour: number;
  route: string;
  reason: string;
  requests: number;
  items: number;
  /** Epoch ms of the newest request counted. */
  lastAt: number;
}

/** What may be last used: an API key (by its id), an integration, or an operator token (by its name). */
export type LastUseKind = 'key' | 'integration' | 'token';

/** When and from where something was last used. A newer use replaces an older one, never the reverse. */
export interface LastUse {
  kind: LastUseKind;
  id: string;
  /** Epoch ms. */
  at: number;
  address: string;
}

/** One flush of a process's recorder: written together, each part with a few statements. */
export interface UsageBatch {
  log: readonly RequestLogRow[];
  counts: readonly UsageCount[];
  lastUses: readonly LastUse[];
}

/** A page of the request log, newest first. Null filters match everything. */
export interface RequestLogQuery {
  /** Only this integration ('' for requests no integration could be named for); null: every integration. */
  integration: string | null;
  /** Rows older than this position (the previous page's last `seq`); null: from the newest. */
  before: number | null;
  /** Rows at or after this epoch ms. */
  since: number | null;
  /** Rows before this epoch ms. */
  until: number | null;
  /** Only this status. */
  status: number | null;
  /** Only failed requests (status >= 400) when true, only successes when false. */
  failed: boolean | null;
  /** Only this error code. */
  code: string | null;
  /** Only this route template. */
  route: string | null;
  limit: number;
}

/** The usage counts of one integration (or every one) since an hour. */
export interface UsageCountQuery {
  integration: string | null;
  /** Epoch ms: hours starting at or after it. */
  sinceHour: number;
}

/** What a retention run of the request log and the usage counts dropped. */
export interface UsageTrim {
  /** Request log rows recorded before this epoch ms go. */
  logBefore: number;
  /** Beyond this many rows of one integration, its oldest go. */
  rowsPerIntegration: number;
  /** Usage counts of hours before this epoch ms go. */
  countsBefore: number;
  /** Rows per delete statement (default 1000). */
  batchSize?: number;
  /** Stops between batches once aborted. */
  signal?: AbortSignal;
}
