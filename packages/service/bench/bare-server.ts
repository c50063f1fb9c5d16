// Baseline for the HTTP benchmarks: a bare node:http server writing, from memory, the exact response
// bytes the API sent for the same URL. Started as its own process by the benchmarks (harness.ts).
// BODIES_FILE is JSON, `[[url, base64 body], ...]`, or, when its name ends in `.ndjson`, one `[url, base64 body]`
// per line (the feed's walks, too large for one string); a URL it does not hold is answered 404. With
// `fastify` the same answers come from a Fastify app with one route and nothing else (no hooks, no schemas):
// the least any API built on Fastify pays per request, beside the least Node's own server pays. With
// `fastify-store DB_PATH` that app also answers `GET /v1/leads/:id` with the store's own statement over the
// bench database (`Store.leadDetail`, as the API runs it), and nothing else: no key, limiter or team check.
// Its rate is what a single lead could reach if everything the API itself does per request cost nothing.
//
//   node --import tsx bench/bare-server.ts BODIES_FILE [fastify | fastify-store DB_PATH]
import { createReadStream, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createInterface } from 'node:readline';
import Fastify from 'fastify';
import { SqliteStore } from './service.js';

const type = 'application/json; charset=utf-8';
const file = process.argv[2] as string;
const entries: [string, string][] = [];
if (file.endsWith('.ndjson')) {
  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    if (line) entries.push(JSON.parse(line) as [string, string]);
  }
} else entries.push(...(JSON.parse(readFileSync(file, 'utf8')) as [string, string][]));
const answers = new Map(
  entries.splice(0).map(([url, base64]) => {
    const body = Buffer.from(base64, 'base64');
    return [url, { body, headers: { 'content-type': type, 'content-length': String(body.length) } }];
  }),
);
let server: Server;
const mode = process.argv[3];
if (mode === 'fastify' || mode === 'fastify-store') {
  const app = Fastify();
  if (mode === 'fastify-store') {
    const store = new SqliteStore({ path: process.argv[4] as string, mustExist: true });
    app.get<{ Params: { id: string } }>('/v1/leads/:id', async (request, reply) => {
      const lead = await store.leadDetail(request.params.id);
      if (!lead) return reply.code(404).send();
      return reply.header('content-type', type).send(lead.body);
    });
  }
  app.get('/*', (request, reply) => {
    const answer = answers.get(request.url);
    if (!answer) return reply.code(404).send();
    return reply.headers(answer.headers).send(answer.body);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  server = app.server;
} else {
  server = createServer((req, res) => {
    const answer = answers.get(req.url ?? '');
    if (!answer) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, answer.headers);
    res.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
}
const address = server.address();
if (address && typeof address === 'object') process.send?.({ port: address.port });
process.on('message', (m) => {
  if (m === 'rss') process.send?.({ maxRssKb: process.resourceUsage().maxRSS });
  if (m === 'rss-now') process.send?.({ rssKb: process.memoryUsage.rss() / 1024 });
  if (m === 'cpu') {
    const { user, system } = process.cpuUsage();
    process.send?.({ cpuUs: user + system });
  }
  if (m === 'stop') server.close(() => process.exit(0));
});
