// An HTTP proxy on the loopback interface in front of a real service, injecting the faults a consumer
// must survive. Customers can point their own consumer at it.
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { AnswerMemory, type RememberedAnswer } from './answer-memory.js';
import type { Fault, FaultKind, FaultPlan, FaultRequest } from './fault-plan.js';

export interface FaultProxyOptions {
  /** The service's origin, e.g. `http://127.0.0.1:3000` (plain HTTP on the same machine). */
  target: string;
  /** Which faults to inject. */
  plan: FaultPlan;
  /** Port to listen on (default: any free port). */
  port?: number;
  /** Loopback address to bind (default 127.0.0.1); anything else is refused. */
  host?: '127.0.0.1' | 'localhost' | '::1';
  /** Where `/docs/errors#code` links of injected problems point. */
  docsUrl?: string;
  /**
   * Rewrites the body of a successful (2xx) answer of the service before it is passed on and remembered
   * for `duplicate_page`; receives the same request object the plan saw. The torture kit injects records
   * with it.
   */
  rewrite?: (request: FaultRequest, body: Buffer) => Buffer;
  /**
   * Awaited when a request has arrived, before the plan sees it: the torture kit changes the service or
   * stops the consumer there. Receives the same request object as the plan.
   */
  before?: (request: FaultRequest) => Promise<void>;
  /**
   * Bound of the answers remembered for `duplicate_page`, counting each one's key, headers and body
   * (default 16 MiB); the least recently used are forgotten first.
   */
  memoryBytes?: number;
}

export interface FaultProxy {
  /** The proxy's origin; append the API's path (`/v1`). */
  url: string;
  /** How many times each fault was injected. */
  readonly injected: Partial<Record<FaultKind, number>>;
  /** Requests seen (passed through or faulted). */
  readonly requests: number;
  /** Answers remembered for `duplicate_page` and the bytes they count (at most `memoryBytes`). */
  readonly remembered: { entries: number; bytes: number };
  /** Replaces the plan (e.g. between phases of a test). */
  setPlan(plan: FaultPlan): void;
  close(): Promise<void>;
}

type Captured = RememberedAnswer;

const PROBLEMS: Partial<Record<FaultKind, { status: number; code: string }>> = {
  rate_limited: { status: 429, code: 'rate_limited' },
  quota_exceeded: { status: 429, code: 'quota_exceeded' },
  internal_error: { status: 500, code: 'internal_error' },
  service_unavailable: { status: 503, code: 'service_unavailable' },
  sync_cursor_expired: { status: 410, code: 'sync_cursor_expired' },
  resync_required: { status: 409, code: 'resync_required' },
  capture_not_ready: { status: 409, code: 'capture_not_ready' },
  team_not_accessible: { status: 404, code: 'team_not_accessible' },
};

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const host = options.host ?? '127.0.0.1';
  if (!['127.0.0.1', 'localhost', '::1'].includes(host)) throw new Error('the fault proxy binds to loopback only');
  const target = new URL(options.target);
  if (target.protocol !== 'http:') throw new Error('the fault proxy forwards to an http:// target');
  const docsUrl = options.docsUrl ?? 'https://docs.invalid';
  let plan = options.plan;
  const injected: Partial<Record<FaultKind, number>> = {};
  let requests = 0;
  /** Last answer per key, method, path, filters and team, for `duplicate_page`. */
  const previous = new AnswerMemory(options.memoryBytes);
  const sockets = new Set<Socket>();

  const forward = (req: IncomingMessage, body: Buffer): Promise<Captured> =>
    new Promise((resolve, reject) => {
      const headers = { ...req.headers, host: target.host };
      // A body the proxy rewrites must come uncompressed.
      if (options.rewrite) delete headers['accept-encoding'];
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }),
          );
          res.on('error', reject);
        },
      );
      upstream.on('error', reject);
      upstream.end(body);
    });

  const send = (res: ServerResponse, c: Captured) => {
    const headers = { ...c.headers };
    delete headers['transfer-encoding'];
    delete headers.connection;
    headers['content-length'] = String(c.body.length);
    res.writeHead(c.status, headers);
    res.end(c.body);
  };

  /** The whole answer's headers, half its body, then the connection reset: the body ends early. */
  const cutMidBody = (req: IncomingMessage, res: ServerResponse, c: Captured) => {
    const headers = { ...c.headers };
    delete headers['transfer-encoding'];
    delete headers.connection;
    headers['content-length'] = String(c.body.length);
    res.writeHead(c.status, headers);
    res.write(c.body.subarray(0, Math.floor(c.body.length / 2)), () => req.socket.destroy());
  };

  const problem = (res: ServerResponse, fault: Fault, status: number, code: string) => {
    const requestId = `req_${randomUUID()}`;
    const type = `${docsUrl}/errors#${code}`;
    const headers: Record<string, string> = {
      'content-type': 'application/problem+json',
      'service-request-id': requestId,
    };
    if (status === 429) headers['retry-after'] = String(fault.retryAfter ?? 1);
    else if (status >= 500 && fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
    res.writeHead(status, headers);
    res.end(JSON.stringify({ type, title: `Injected ${code}`, status, code, request_id: requestId, doc_url: type }));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    requests++;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const teamHeader = req.headers['service-team'];
    const memoKey = previous.keyOf({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      authorization: req.headers.authorization,
      team: typeof teamHeader === 'string' ? teamHeader : undefined,
    });
    const request: FaultRequest = { method: req.method ?? 'GET', path };
    if (typeof teamHeader === 'string') request.team = teamHeader;
    request.query = new URL(req.url ?? '/', 'http://x').search;
    if (options.before) await options.before(request);
    const fault = plan.next(request);
    if (fault) injected[fault.kind] = (injected[fault.kind] ?? 0) + 1;
    const kind = fault?.kind;
    if (kind === 'cut_connection') return void req.socket.destroy();
    if (kind === 'firewall_429') {
      res.writeHead(429, { 'content-type': 'text/plain' });
      return void res.end('Too Many Requests');
    }
    const p = kind ? PROBLEMS[kind] : undefined;
    if (fault && p) return problem(res, fault, p.status, p.code);
    if (kind === 'duplicate_page') {
      const prior = previous.get(memoKey);
      if (prior) return send(res, prior);
    }
    if (kind === 'delay') await new Promise((r) => setTimeout(r, fault?.delayMs ?? 200));
    let answer: Captured;
    try {
      answer = await forward(req, body);
    } catch {
      return void req.socket.destroy();
    }
    if (answer.status >= 200 && answer.status < 300) {
      if (options.rewrite) answer = { ...answer, body: options.rewrite(request, answer.body) };
      previous.set(memoKey, answer);
    }
    // The server answered (and may have counted the items); the consumer never hears of it.
    if (kind === 'drop_response') return void req.socket.destroy();
    if (kind === 'cut_mid_body') return cutMidBody(req, res, answer);
    send(res, answer);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => req.socket.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${urlHost}:${address.port}`,
    injected,
    get requests() {
      return requests;
    },
    get remembered() {
      return previous.size;
    },
    setPlan(next) {
      plan = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
