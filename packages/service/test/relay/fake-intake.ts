import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A stand-in for the intake endpoint that keeps the wire protocol's rules in memory (last applied seq per
// source, `follows`, duplicates, 409 sequence_gap), so the relay's own behaviour is tested apart from the
// service's write side. `refuse` makes the next posts fail with a status and a Retry-After.

export interface FakeIntake {
  origin: string;
  token: string;
  /** The seqs applied, in the order they were applied, per source. */
  applied(source?: string): number[];
  /** The events applied (as posted), per source. */
  events(source?: string): Record<string, unknown>[];
  /** Every post: when it came and what it was answered. */
  posts: { at: number; status: number; follows: number; seqs: number[] }[];
  /** Sets a source's last applied seq, as a service that applied more than this outbox holds. */
  setLast(source: string, seq: number): void;
  /** The next `count` posts are answered `status` with `Retry-After: retryAfter` seconds. */
  refuse(count: number, status: number, retryAfter?: number): void;
  close(): Promise<void>;
}

async function body(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text;
}

export async function startFakeIntake(
  token = 'cxo_testtoken0123456789abcdefghijklmnop',
  port = 0,
): Promise<FakeIntake> {
  const last = new Map<string, number>();
  const applied = new Map<string, number[]>();
  const events = new Map<string, Record<string, unknown>[]>();
  const posts: FakeIntake['posts'] = [];
  let refusals: { count: number; status: number; retryAfter?: number } = { count: 0, status: 503 };
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, answer: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, {
        'content-type': status === 200 ? 'application/json' : 'application/problem+json',
        ...headers,
      });
      res.end(JSON.stringify(answer));
    };
    if (req.headers.authorization !== `Bearer ${token}`) return send(401, { code: 'token_invalid' });
    const url = new URL(req.url ?? '/', 'http://x');
    const named = /^\/intake\/v1\/sources\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && named) {
      const source = decodeURIComponent(named[1]!);
      return send(200, { source, last_seq: last.get(source) ?? 0 });
    }
    if (req.method !== 'POST' || url.pathname !== '/intake/v1/batches') return send(404, { code: 'not_found' });
    const batch = JSON.parse(await body(req)) as { source: string; follows?: number; events: { seq: number }[] };
    const seqs = batch.events.map((e) => e.seq);
    const follows = batch.follows ?? (seqs[0] ?? 1) - 1;
    if (refusals.count > 0) {
      refusals.count -= 1;
      posts.push({ at: Date.now(), status: refusals.status, follows, seqs });
      const headers: Record<string, string> =
        refusals.retryAfter === undefined ? {} : { 'retry-after': String(refusals.retryAfter) };
      return send(refusals.status, { code: refusals.status === 429 ? 'intake_busy' : 'database_unavailable' }, headers);
    }
    const lastSeq = last.get(batch.source) ?? 0;
    if (follows > lastSeq) {
      posts.push({ at: Date.now(), status: 409, follows, seqs });
      return send(409, { code: 'sequence_gap', last_seq: lastSeq });
    }
    let now = lastSeq;
    const results = batch.events.map((event) => {
      if (event.seq <= now) return { seq: event.seq, outcome: 'duplicate' };
      now = event.seq;
      applied.set(batch.source, [...(applied.get(batch.source) ?? []), event.seq]);
      events.set(batch.source, [...(events.get(batch.source) ?? []), event as Record<string, unknown>]);
      return { seq: event.seq, outcome: 'applied' };
    });
    last.set(batch.source, now);
    posts.push({ at: Date.now(), status: 200, follows, seqs });
    return send(200, { source: batch.source, last_seq: now, results });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  const address = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${address.port}`,
    token,
    applied: (source = 'crm-main') => applied.get(source) ?? [],
    events: (source = 'crm-main') => events.get(source) ?? [],
    posts,
    setLast: (source, seq) => {
      last.set(source, seq);
    },
    refuse: (count, status, retryAfter) => {
      refusals = { count, status, ...(retryAfter === undefined ? {} : { retryAfter }) };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
