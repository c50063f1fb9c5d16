import type { Endpoint } from './endpoint.js';
import { FEED_ENDPOINTS } from './routes/feed.js';
import { LEAD_ENDPOINTS } from './routes/leads.js';
import { META_ENDPOINTS } from './routes/meta.js';
import { RECORD_ENDPOINTS } from './routes/records.js';
import { TEAM_ENDPOINTS } from './routes/teams.js';

// Every endpoint of the API, in the order they are registered (the order of openapi.json's paths). The
// app, openapi.json and the scopes table of docs/api.md all come from this list.

export const ENDPOINTS: readonly Endpoint[] = [
  ...META_ENDPOINTS,
  ...TEAM_ENDPOINTS,
  ...LEAD_ENDPOINTS,
  ...RECORD_ENDPOINTS,
  ...FEED_ENDPOINTS,
];

/** The document holding the generated table, from the repository root. */
export const API_DOC_PATH = 'docs/api.md';

/** `/v1/calls/:id` as OpenAPI and the docs spell it. */
function documentedPath(url: string): string {
  return url.replace(/:([A-Za-z]+)/g, '{$1}');
}

function callerCell({ caller }: Endpoint): string {
  if (caller === 'no_key') return 'no key';
  if (caller === 'any_key') return 'none (any valid key)';
  return `\`${caller}\``;
}

function rateCell({ charge }: Endpoint): string {
  if (!charge) return 'none';
  if (charge.rateClass === 'read') return 'read';
  return charge.items === 'limit' ? 'sync, `limit` items' : 'sync, fixed allowance';
}

function teamCell({ team }: Endpoint): string {
  if (team.from === 'none') return 'none';
  return team.from === 'header' ? '`Service-Team`' : "the record's";
}

function captureCell({ team }: Endpoint): string {
  if (team.from === 'none') return '';
  return team.whileUncaptured === 'capture_not_ready' ? '409 `capture_not_ready`' : '404 `resource_missing`';
}

/** The table of scopes, rate classes and team binding of docs/api.md, generated from ENDPOINTS. */
export function endpointsTable(): string {
  const rows = ENDPOINTS.map((e) =>
    [
      `\`${e.method} ${documentedPath(e.url)}\``,
      callerCell(e),
      rateCell(e),
      e.charge?.quota ? 'yes' : 'no',
      teamCell(e),
      captureCell(e),
    ].join(' | '),
  );
  return [
    '| Endpoint | Scope | Rate class | Counts toward the daily quota | Team | Team not yet prepared |',
    '|---|---|---|---|---|---|',
    ...rows.map((row) => `| ${row} |`),
  ].join('\n');
}

const BLOCK = /(<!-- endpoints:begin[^\n]*-->\n)[\s\S]*?(<!-- endpoints:end -->)/;

/** The document with its `<!-- endpoints:begin ... -->` ... `<!-- endpoints:end -->` block replaced by the table. */
export function withEndpointsTable(doc: string): string {
  if (!BLOCK.test(doc)) throw new Error(`${API_DOC_PATH} has no endpoints:begin/end markers`);
  return doc.replace(BLOCK, (_all, begin: string, end: string) => `${begin}${endpointsTable()}\n${end}`);
}
