// Baseline for the HTTP benchmarks: a bare node:http server writing the same response bytes from
// memory that the API sent for the same request. Started as its own process by bench/run.ts.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const body = readFileSync(process.argv[2] as string);
const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': String(body.length) };
const server = createServer((_req, res) => {
  res.writeHead(200, headers);
  res.end(body);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object') process.send?.({ port: address.port });
});
process.on('message', (m) => {
  if (m === 'rss') process.send?.({ maxRssKb: process.resourceUsage().maxRSS });
  if (m === 'stop') server.close(() => process.exit(0));
});
