import { fmtInt, fmtRatio, type LoadPlan, measure, ratio, table } from './harness.js';
import { sqliteLeads } from './lead-data.js';
import { startApi } from './list-bench.js';

// What the request log and the metrics cost (docs/operations.md): the same API with both off, with a log
// line per request only (the service's logger, written synchronously, here to /dev/null), with the metrics
// hook only, and with both. Two requests: a cached list page and /v1/me (little work, so the overhead
// shows most).

const VARIANTS = [
  ['off', undefined],
  ['log', 'log'],
  ['metrics', 'metrics'],
  ['both', 'both'],
] as const;

/** `quick`: both off against both on only (what each adds alone is left to the full run). */
export async function observeBench(options: { plan: LoadPlan; leads: number; quick?: boolean }): Promise<string> {
  const { plan } = options;
  const variants = options.quick ? VARIANTS.filter(([name]) => name === 'off' || name === 'both') : VARIANTS;
  const data = await sqliteLeads(options.leads);
  const servers = await Promise.all(
    variants.map(([, observe]) => startApi({ url: data.url, access: 'memory', ...(observe ? { observe } : {}) })),
  );
  try {
    const headers = { authorization: `Bearer ${data.key}` };
    const requests = [
      ['GET /v1/leads?limit=100 (page cache)', '/v1/leads?limit=100'],
      ['GET /v1/me', '/v1/me'],
    ] as const;
    const m = await measure(
      requests.flatMap(([, path]) =>
        variants.map(([name], i) => ({
          name: `${path} ${name}`,
          url: `${servers[i]?.origin}${path}`,
          headers,
          server: servers[i] as NonNullable<(typeof servers)[number]>,
        })),
      ),
      plan,
    );
    const get = (name: string) => m.get(name) as NonNullable<ReturnType<typeof m.get>>;
    const rows = requests.flatMap(([label, path]) =>
      variants.map(([name]) => {
        const r = get(`${path} ${name}`);
        const base = get(`${path} off`);
        return [
          `${label}, ${name === 'off' ? 'log and metrics off (baseline)' : name === 'both' ? 'log and metrics' : `${name} only`}`,
          fmtInt(r.median),
          fmtRatio(ratio(r, base)),
          fmtInt(r.cpuUsPerRequest),
          fmtInt(r.cpuUsPerRequest - base.cpuUsPerRequest),
        ];
      }),
    );
    return [
      `### Request log and metrics (SQLite, ${fmtInt(data.leads)} leads, ${plan.connections} connections, ${plan.rounds} x ${plan.seconds} s)`,
      '',
      table(
        ['request, variant', 'req/s (median)', 'req/s ratio', 'server CPU µs/req', 'added CPU µs/req'],
        ['l', 'r', 'r', 'r', 'r'],
        rows,
      ),
      '',
    ].join('\n');
  } finally {
    for (const server of servers) await server.stop();
  }
}
