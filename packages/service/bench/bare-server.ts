// Baseline for the HTTP benchmarks: a bare node:http server writing, from memory, the exact response
// bytes the API sent for the same URL. Started as its own process by the benchmarks (harness.ts).
// BODIES_FILE is JSON, `[[url, base64 body], ...]`, or, when its name ends in `.ndjson`, one `[url, base64 body]`
// per line (the feed's walks, too large for one string); a URL it does not hold is answered 404. With
// `fastify` the same answers come from a Fastify app with one route and nothing else (no hooks, no schemas):
// the least any API built on Fastify pays per request, beside the least Node's own server pays.
//
//   node --import tsx bench/bare-server.ts BODIES_FILE [fastify]
import { createReadStream, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createInterface } from 'node:readline';
import Fastify from 'fastify';

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
if (process.argv[3] === 'fastify') {
  const app = Fastify();
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
