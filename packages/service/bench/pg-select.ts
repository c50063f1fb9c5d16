import pg from 'pg';

// Baseline of the single-record read (issue 5): the same row read with a plain SELECT through pg, in a
// process of its own, `connections` loops over a pool of that size, so the concurrency matches the
// autocannon connections against the API. Driven over IPC by pg-bench.ts.
//
//   node --import tsx bench/pg-select.ts '{"url":"postgres://...","schema":"leads_10000","ids":["lead_B0"],"rows":1}'

interface Config {
  url: string;
  schema: string;
  ids: string[];
  /** 1: the lead row; 3: the lead and its two facets, as GET /v1/leads/{id} reads them. */
  rows: 1 | 3;
}

const config = JSON.parse(process.argv[2] as string) as Config;
const kinds = config.rows === 3 ? ['lead', 'lead_attribution', 'lead_response'] : ['lead'];
let pool: pg.Pool | undefined;

async function run(seconds: number, connections: number): Promise<number> {
  pool ??= new pg.Pool({ connectionString: config.url, max: connections, options: `-c search_path=${config.schema}` });
  const active = pool;
  const until = performance.now() + seconds * 1000;
  let done = 0;
  const loop = async (offset: number) => {
    for (let i = offset; performance.now() < until; i += connections) {
      const id = config.ids[i % config.ids.length] as string;
      // The facets are read side by side, as the endpoint does.
      const results = await Promise.all(
        kinds.map((kind) => active.query('SELECT json FROM records WHERE kind = $1 AND id = $2', [kind, id])),
      );
      if (results[0]?.rowCount !== 1) throw new Error(`no ${id}`);
      done++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: connections }, (_, c) => loop(c)));
  return done / ((performance.now() - started) / 1000);
}

process.on('message', (m: { seconds?: number; connections?: number; stop?: boolean }) => {
  if (m.stop) {
    void (pool?.end() ?? Promise.resolve()).then(() => process.exit(0));
    return;
  }
  run(m.seconds ?? 1, m.connections ?? 10).then(
    (rps) => process.send?.({ rps }),
    (error: unknown) => process.send?.({ error: String(error) }),
  );
});
process.send?.({ ready: true });
