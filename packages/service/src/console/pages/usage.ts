import { requestsAction, usageAction } from '../../manage/actions/usage.js';
import type { IntegrationUsage, RequestLogEntry, RequestLogPage } from '../../usage/usage-reads.js';
import { act, operatorOf, type PageContext } from '../page.js';
import { jsonData } from '../views.js';

// Usage and the request log of an integration, through the management API's actions `usage.get` and
// `requests.list` (reads of usage/usage-reads.ts).

/** What the integration page shows of usage. */
export interface UsageView {
  error?: string;
  numbers?: { label: string; value: string }[];
  /** JSON of `{ hour, items }[]` for the chart (24 hours, oldest first). */
  hours?: string;
  refusals?: { code: string; count: number }[];
}

/** A figure; null when this process does not hold the counter (the API's limiter keeps it). */
const count = (n: number | null) => (n === null ? '—' : n.toLocaleString('en-US'));

export async function readUsage(
  page: PageContext,
  integration: { id: string; keys: { id: string }[] },
): Promise<UsageView> {
  const usage = (await act(page, usageAction, { id: integration.id })) as unknown as IntegrationUsage;
  return {
    numbers: [
      { label: `Items this minute (limit ${count(usage.minute.limit)})`, value: count(usage.minute.items) },
      {
        label: `Items today, ${usage.today.day} (quota ${count(usage.today.quota)})`,
        value: count(usage.today.recorded),
      },
      { label: 'Requests, last 24 hours', value: count(usage.itemsPerHour.reduce((n, h) => n + h.requests, 0)) },
      { label: 'Failed, last 24 hours', value: count(usage.itemsPerHour.reduce((n, h) => n + h.failed, 0)) },
    ],
    hours: jsonData(usage.itemsPerHour.map((h) => ({ hour: h.hour, items: h.items }))),
    refusals: usage.refusals.map((r) => ({ code: r.reason, count: r.count })),
  };
}

export interface RequestLogView {
  retention: string;
  filters: { name: string; label: string; value?: string; options?: string[]; placeholder?: string }[];
  columns: { key: string; label: string }[];
  rows: Record<string, string | number>[];
  /** The link to the next, older page, if there is one. */
  older?: string;
  error?: string;
}

const COLUMNS = [
  { key: 'at', label: 'Time (UTC)' },
  { key: 'requestId', label: 'Request id' },
  { key: 'method', label: 'Method' },
  { key: 'endpoint', label: 'Endpoint' },
  { key: 'status', label: 'Status' },
  { key: 'code', label: 'Code' },
  { key: 'items', label: 'Items' },
  { key: 'address', label: 'Address' },
];
const OUTCOMES = ['failed', 'succeeded'];

function retention(ms: number, rows: number): string {
  const days = ms / 86_400_000;
  const span = days >= 1 ? `${days} day${days === 1 ? '' : 's'}` : `${Math.round(ms / 60_000)} minutes`;
  return `${span}, at most ${rows.toLocaleString('en-US')} requests per integration`;
}

/** The request log page of an integration with the filters typed in the query (blank: no filter). */
export async function readRequestLog(
  page: PageContext,
  integration: string,
  query: Record<string, string | undefined>,
): Promise<RequestLogView> {
  const typed = (name: string) => (query[name]?.trim() ? query[name]?.trim() : undefined);
  const filter: {
    id: string;
    limit: number;
    failed?: boolean;
    status?: number;
    code?: string;
    endpoint?: string;
    since?: string;
    after?: string;
  } = {
    id: integration,
    limit: 100,
  };
  const outcome = typed('outcome');
  if (outcome === 'failed' || outcome === 'succeeded') filter.failed = outcome === 'failed';
  const status = typed('status');
  let error: string | undefined;
  if (status !== undefined) {
    if (/^[1-5][0-9]{2}$/.test(status)) filter.status = Number(status);
    else error = `Status ${status} is not an HTTP status.`;
  }
  const code = typed('code');
  if (code) filter.code = code;
  const endpoint = typed('endpoint');
  if (endpoint) filter.endpoint = endpoint;
  const since = typed('since');
  if (since) {
    if (Number.isNaN(Date.parse(since))) error = `Since ${since} is not a time (2026-03-01T12:00:00Z).`;
    else filter.since = since;
  }
  const after = typed('after');
  if (after) filter.after = after;
  const ctx = page.deps.manageContext({ name: operatorOf(page.request).name });
  const found = error
    ? { entries: [], next: null }
    : ((await act(page, requestsAction, filter)) as unknown as RequestLogPage);
  const params = new URLSearchParams(
    Object.entries({ outcome, status, code, endpoint, since }).filter((e): e is [string, string] => e[1] !== undefined),
  );
  if (found.next) params.set('after', found.next);
  return {
    retention: retention(ctx.limits.requestLogRetentionMs, ctx.limits.requestLogRowsPerIntegration),
    filters: [
      { name: 'outcome', label: 'Outcome', value: outcome, options: OUTCOMES },
      { name: 'status', label: 'Status', value: status, placeholder: '401' },
      { name: 'code', label: 'Code', value: code, placeholder: 'ip_not_allowed' },
      { name: 'endpoint', label: 'Endpoint', value: endpoint, placeholder: '/v1/leads' },
      { name: 'since', label: 'Since', value: since, placeholder: '2026-03-01T12:00:00Z' },
    ],
    columns: COLUMNS,
    rows: found.entries.map((e: RequestLogEntry) => ({ ...e, code: e.code ?? '' })),
    ...(found.next ? { older: `?${params.toString()}` } : {}),
    ...(error ? { error } : {}),
  };
}
