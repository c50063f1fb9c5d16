// Baseline for the HTTP benchmarks: a bare node:http server writing, from memory, the exact response
// bytes the API sent for the same URL. Started as its own process by the benchmarks (harness.ts).
// BODIES_FILE is JSON, `[[url, base64 body], ...]`, or, when its name ends in `.ndjson`, one `[url, base64 body]`
// per line (the feed's walks, too large for one string); a URL it does not hold is answered 404.
//
//   node --import tsx bench/bare-server.ts BODIES_FILE
import { createReadStream, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';

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
const server = createServer((req, res) => {
  const answer = answers.get(req.url ?? '');
  if (!answer) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, answer.headers);
  res.end(answer.body);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object') process.send?.({ port: address.port });
});
process.on('message', (m) => {
  if (m === 'rss') process.send?.({ maxRssKb: process.resourceUsage().maxRSS });
  if (m === 'rss-now') process.send?.({ rssKb: process.memoryUsage.rss() / 1024 });
  if (m === 'cpu') {
    const { user, system } = process.cpuUsage();
    process.send?.({ cpuUs: user + system });
  }
  if (m === 'stop') server.close(() => process.exit(0));
});
