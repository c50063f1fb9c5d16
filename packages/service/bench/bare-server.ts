// Baseline for the HTTP benchmarks: a bare node:http server writing the same response bytes from
// memory that the API sent for the same request. Started as its own process by bench/run.ts.
// Other modes, for scale: `string` writes the same body held as a JS string (as the API sends stored
// JSON), `stringify` parses the bytes once and calls JSON.stringify on the result per request.
//
//   node --import tsx bench/bare-server.ts BODY_FILE [bytes|string|stringify]
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const bytes = readFileSync(process.argv[2] as string);
const mode = process.argv[3] ?? 'bytes';
const text = bytes.toString('utf8');
const parsed: unknown = JSON.parse(text);
const type = 'application/json; charset=utf-8';
const headers = { 'content-type': type, 'content-length': String(bytes.length) };
const server = createServer((_req, res) => {
  if (mode === 'bytes') {
    res.writeHead(200, headers);
    res.end(bytes);
    return;
  }
  const body = mode === 'string' ? text : JSON.stringify(parsed);
  res.writeHead(200, { 'content-type': type, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object') process.send?.({ port: address.port });
});
process.on('message', (m) => {
  if (m === 'rss') process.send?.({ maxRssKb: process.resourceUsage().maxRSS });
  if (m === 'cpu') {
    const { user, system } = process.cpuUsage();
    process.send?.({ cpuUs: user + system });
  }
  if (m === 'stop') server.close(() => process.exit(0));
});
