import type { UsageReport } from '../access/store-access-control.js';
import type { Clock } from '../clock.js';
import type { Limits } from '../limits.js';
import type { LastUseKind, Store, StoredRequestLogRow, UsageCount } from '../store/store.js';
import type { RecorderStats, UsageRecorder } from './recorder.js';

// The reads of what the recorder wrote (docs/request-log.md), for the management API and the console:
// last use, usage against the limits, refusals by reason, recent failures, and the request log. Each is a
// plain function over the store; usage also reads the limiter's counters (this process's memory, or Redis
// shared by every process). Times are ISO 8601 UTC strings.

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * Reasons that are refusals of access (the key, the address, the limits, the team, the switches, the
 * firewall), as opposed to bad requests, missing records and faults.
 */
export const REFUSAL_REASONS: readonly string[] = [
  'invalid_credentials',
  'key_expired',
  'secret_key_in_browser',
  'ip_not_allowed',
  'locked_out',
  'rate_limited',
  'quota_exceeded',
  'insufficient_scope',
  'team_not_accessible',
  'plan_not_entitled',
  'team_state_restricted',
  'sector_restricted',
  'api_disabled',
  'capability_disabled',
  'firewall_budget',
  'firewall_method_or_path',
  'firewall_body_not_allowed',
  'firewall_body_too_large',
];

/** The limiter's counters of one integration: `StoreAccessControl` of the API process has them. */
export interface LimiterCounters {
  usage(integrationId: string, keyIds: readonly string[]): Promise<UsageReport>;
}

export interface UsageReadContext {
  store: Store;
  clock: Clock;
  limits: Pick<Limits, 'itemsPerMinute' | 'readRequestsPerMinute' | 'dailyItemQuota' | 'rateWindowSeconds'>;
  /** The process's access control; absent (no API process here), the counters are reported as null. */
  counters?: LimiterCounters | undefined;
  /** The process's recorder; absent when recording is off. */
  recorder?: UsageRecorder | undefined;
}

export interface LastUseView {
  at: string;
  address: string;
}

export interface IntegrationUsage {
  integration: string;
  minute: {
    /** Items counted in the current rate window (null: the counters are not in this process). */
    items: number | null;
    limit: number;
    reads: number | null;
    readLimit: number;
    windowSeconds: number;
  };
  today: {
    /** The UTC day. */
    day: string;
    /** Items counted toward today's quota by the limiter (null as above). */
    items: number | null;
    quota: number;
    /** Items answered today as the usage counts hold them, every process added up (up to a flush behind). */
    recorded: number;
  };
  /** True when the counters are Redis's (every process); false: this process's memory only. */
  countersShared: boolean;
  /** Refusals in the last 24 hours by reason, most first. */
  refusals: { reason: string; count: number }[];
  /** The last 24 hours, oldest first, the current hour last: items answered, requests, failed requests. */
  itemsPerHour: { hour: string; items: number; requests: number; failed: number }[];
  /** Whether recording is on, and what this process's recorder has written and dropped. */
  recording: RecorderStats;
}

export interface FailureGroup {
  code: string;
  /** The route template. */
  endpoint: string;
  count: number;
  /** The newest of them. */
  lastAt: string;
}

export interface RequestLogFilter {
  /** One integration; null: every integration (operators). */
  integration: string | null;
  /** Entries per page (default 50, at most 500). */
  limit?: number;
  /** The `next` of the previous page. */
  after?: string;
  /** ISO 8601 bounds. */
  since?: string;
  until?: string;
  status?: number;
  /** true: failed requests only (status >= 400); false: successes only. */
  failed?: boolean;
  code?: string;
  /** A route template, e.g. `/v1/leads`. */
  endpoint?: string;
}

export interface RequestLogEntry {
  at: string;
  requestId: string;
  /** '' when the request named no integration that exists. */
  integration: string;
  method: string;
  endpoint: string;
  status: number;
  code: string | null;
  items: number;
  address: string;
}

export interface RequestLogPage {
  entries: RequestLogEntry[];
  /** Pass as `after` for the next (older) page; null on the last page. */
  next: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();
const OFF: RecorderStats = { enabled: false, queued: 0, dropped: 0, flushes: 0, failedFlushes: 0, lastFlushAt: null };

/** When and from where each of `ids` was last used (ids never used are absent). Up to a flush behind. */
export async function lastUses(
  store: Store,
  kind: LastUseKind,
  ids: readonly string[],
): Promise<Record<string, LastUseView>> {
  const found = await store.lastUses(kind, ids);
  return Object.fromEntries(found.map((u) => [u.id, { at: iso(u.at), address: u.address }]));
}

/** The recorder's state in this process (enabled false when `REQUEST_LOG=off`). */
export function recordingStats(recorder: UsageRecorder | undefined): RecorderStats {
  return recorder ? recorder.stats() : OFF;
}

/** One integration's usage: this minute and today against the limits, refusals, items per hour. */
export async function integrationUsage(
  ctx: UsageReadContext,
  integration: string,
  keyIds: readonly string[] = [],
): Promise<IntegrationUsage> {
  const { store, clock, limits } = ctx;
  const now = clock.now();
  const thisHour = now - (now % HOUR_MS);
  const dayStart = now - (now % DAY_MS);
  const firstHour = thisHour - 23 * HOUR_MS;
  const counters = ctx.counters ? await ctx.counters.usage(integration, keyIds) : undefined;
  const counts = await store.usageCounts({ integration, sinceHour: Math.min(firstHour, dayStart) });
  const hours = new Map<number, { items: number; requests: number; failed: number }>();
  for (let h = firstHour; h <= thisHour; h += HOUR_MS) hours.set(h, { items: 0, requests: 0, failed: 0 });
  const refusals = new Map<string, number>();
  let recorded = 0;
  for (const c of counts) {
    if (c.hour >= dayStart) recorded += c.items;
    const slot = hours.get(c.hour);
    if (!slot) continue;
    slot.items += c.items;
    slot.requests += c.requests;
    if (c.reason !== '') slot.failed += c.requests;
    if (REFUSAL_REASONS.includes(c.reason)) refusals.set(c.reason, (refusals.get(c.reason) ?? 0) + c.requests);
  }
  return {
    integration,
    minute: {
      items: counters?.itemsThisMinute ?? null,
      limit: limits.itemsPerMinute,
      reads: counters?.readsThisMinute ?? null,
      readLimit: limits.readRequestsPerMinute,
      windowSeconds: limits.rateWindowSeconds,
    },
    today: {
      day: iso(dayStart).slice(0, 10),
      items: counters?.quotaUsedToday ?? null,
      quota: limits.dailyItemQuota,
      recorded,
    },
    countersShared: counters?.shared ?? false,
    refusals: [...refusals].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count),
    itemsPerHour: [...hours].map(([hour, slot]) => ({ hour: iso(hour), ...slot })),
    recording: recordingStats(ctx.recorder),
  };
}

/** Refusals by reason over the last `hours` (default 24) for one integration, or every one (null). */
export async function refusalsByReason(
  ctx: Pick<UsageReadContext, 'store' | 'clock'>,
  integration: string | null,
  hours = 24,
): Promise<{ reason: string; count: number }[]> {
  const counts = await countsSince(ctx, integration, hours);
  const refusals = new Map<string, number>();
  for (const c of counts) {
    if (REFUSAL_REASONS.includes(c.reason)) refusals.set(c.reason, (refusals.get(c.reason) ?? 0) + c.requests);
  }
  return [...refusals].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count);
}

/** Failed requests over the last `hours` (default 24) by code and endpoint, most first. */
export async function recentFailures(
  ctx: Pick<UsageReadContext, 'store' | 'clock'>,
  integration: string | null,
  hours = 24,
): Promise<FailureGroup[]> {
  const groups = new Map<string, { code: string; endpoint: string; count: number; last: number }>();
  for (const c of await countsSince(ctx, integration, hours)) {
    if (c.reason === '') continue;
    const key = `${c.reason}\u0000${c.route}`;
    const group = groups.get(key);
    if (group) {
      group.count += c.requests;
      group.last = Math.max(group.last, c.lastAt);
    } else groups.set(key, { code: c.reason, endpoint: c.route, count: c.requests, last: c.lastAt });
  }
  return [...groups.values()]
    .sort((a, b) => b.count - a.count || b.last - a.last)
    .map(({ code, endpoint, count, last }) => ({ code, endpoint, count, lastAt: iso(last) }));
}

async function countsSince(
  ctx: Pick<UsageReadContext, 'store' | 'clock'>,
  integration: string | null,
  hours: number,
): Promise<UsageCount[]> {
  const now = ctx.clock.now();
  const since = now - (now % HOUR_MS) - (Math.max(1, Math.floor(hours)) - 1) * HOUR_MS;
  return ctx.store.usageCounts({ integration, sinceHour: since });
}

/** A page of the request log, newest first. A malformed `after` or bound reads as absent. */
export async function requestLogPage(store: Store, filter: RequestLogFilter): Promise<RequestLogPage> {
  const limit = Math.min(500, Math.max(1, Math.floor(filter.limit ?? 50)));
  const after = filter.after !== undefined && /^[1-9][0-9]{0,15}$/.test(filter.after) ? Number(filter.after) : null;
  const time = (value: string | undefined) => {
    const ms = value === undefined ? Number.NaN : Date.parse(value);
    return Number.isNaN(ms) ? null : ms;
  };
  const rows = await store.requestLog({
    integration: filter.integration,
    before: after,
    since: time(filter.since),
    until: time(filter.until),
    status: filter.status ?? null,
    failed: filter.failed ?? null,
    code: filter.code ?? null,
    route: filter.endpoint ?? null,
    limit: limit + 1,
  });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { entries: page.map(entry), next: rows.length > limit && last ? String(last.seq) : null };
}

function entry(row: StoredRequestLogRow): RequestLogEntry {
  return {
    at: iso(row.at),
    requestId: row.requestId,
    integration: row.integration,
    method: row.method,
    endpoint: row.route,
    status: row.status,
    code: row.code,
    items: row.items,
    address: row.address,
  };
}
