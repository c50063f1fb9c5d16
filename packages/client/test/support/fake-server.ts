// A small in-test server (node:http) that speaks the spec's wire format: list envelopes, the changes
// feed with opaque cursors, problem+json errors, Service-Team binding. Faults are injected per request.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FeedEntry {
  kind: string;
  id: string;
  version: number;
  object?: Record<string, unknown>;
  removed?: { reason: string };
}

export interface InjectedResponse {
  status: number;
  /** A problem code: the body becomes problem+json. */
  code?: string;
  /** A raw body instead (the firewall's plain answers). */
  raw?: string;
  headers?: Record<string, string>;
  /** Destroy the socket without answering. */
  cut?: boolean;
}

interface TeamData {
  log: FeedEntry[];
  members: Record<string, unknown>[];
  services: Record<string, unknown>[];
}

export interface RequestSeen {
  method: string;
  path: string;
  query: Record<string, string>;
  team: string | undefined;
  at: number;
}

export class FakeServer {
  readonly key = 'crmx_live_FAKEKEYlookup0000secret';
  readonly teams = new Map<string, TeamData>();
  readonly requests: RequestSeen[] = [];
  /** One-shot responses, consumed in order by requests whose path matches. */
  readonly injected: { path: string; response: InjectedResponse }[] = [];
  /** Serve at most this many items per page whatever `limit` says (short pages). */
  maxPageItems = Number.POSITIVE_INFINITY;
  private server!: Server;
  url = '';
  private versions = new Map<string, number>();
  private counter = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  addTeam(team: string): TeamData {
    const data: TeamData = { log: [], members: [], services: [] };
    this.teams.set(team, data);
    return data;
  }

  newId(prefix: string): string {
    this.counter++;
    return `${prefix}${this.counter.toString(36).padStart(6, '0')}`;
  }

  /** Creates or changes a record: a new version and a feed entry. Returns the record. */
  put(team: string, kind: string, object: Record<string, unknown>): Record<string, unknown> {
    const id = String(object.id);
    const version = (this.versions.get(`${kind}:${id}`) ?? 0) + 1;
    this.versions.set(`${kind}:${id}`, version);
    const record = { ...object, team, version, updated_at: new Date().toISOString() };
    this.data(team).log.push({ kind, id, version, object: record });
    return record;
  }

  remove(team: string, kind: string, id: string, reason: 'erased' | 'deleted' = 'deleted'): void {
    const version = (this.versions.get(`${kind}:${id}`) ?? 0) + 1;
    this.versions.set(`${kind}:${id}`, version);
    this.data(team).log.push({ kind, id, version, removed: { reason } });
  }

  /** Appends an entry exactly as given (replays, lower versions, unknown kinds). */
  push(team: string, entry: FeedEntry): void {
    this.data(team).log.push(entry);
  }

  /** The feed as after retention: only each record's latest state, removals dropped. */
  compact(team: string): void {
    const latest = new Map<string, FeedEntry>();
    for (const e of this.data(team).log) latest.set(`${e.kind}:${e.id}`, e);
    this.data(team).log = [...latest.values()].filter((e) => !e.removed);
  }

  /** The current records of a team (what a mirror should equal). */
  current(team: string): Map<string, FeedEntry> {
    const latest = new Map<string, FeedEntry>();
    for (const e of this.data(team).log) {
      const k = `${e.kind}:${e.id}`;
      if (e.removed) latest.delete(k);
      else latest.set(k, e);
    }
    return latest;
  }

  inject(path: string, response: InjectedResponse): void {
    this.injected.push({ path, response });
  }

  private data(team: string): TeamData {
    const d = this.teams.get(team);
    if (!d) throw new Error(`no team ${team}`);
    return d;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname.replace(/^\/v1/, '');
    const team = req.headers['service-team'] as string | undefined;
    this.requests.push({
      method: req.method ?? '',
      path,
      query: Object.fromEntries(url.searchParams),
      team,
      at: Date.now(),
    });
    for await (const _ of req) {
      // drain the body
    }
    const i = this.injected.findIndex((x) => x.path === path);
    if (i >= 0) {
      const response = (this.injected.splice(i, 1)[0] as { response: InjectedResponse }).response;
      if (response.cut) return void req.socket.destroy();
      if (response.raw !== undefined) {
        res.writeHead(response.status, { 'content-type': 'text/html', ...response.headers });
        return void res.end(response.raw);
      }
      return this.problem(res, response.status, response.code ?? 'internal_error', response.headers);
    }
    if (path === '/health') return this.json(res, { object: 'health', status: 'ok' });
    if (req.headers.authorization !== `Bearer ${this.key}`) return this.problem(res, 401, 'invalid_credentials');
    const teams = [...this.teams.keys()];
    if (path === '/teams') {
      const data = teams.map((id) => ({
        id,
        object: 'team',
        livemode: true,
        name: id,
        timezone: 'UTC',
        default_country: null,
      }));
      return this.json(res, { object: 'list', data, has_more: false, next_cursor: null });
    }
    if (path === '/me') {
      return this.json(res, {
        object: 'integration',
        id: 'prn_1',
        livemode: true,
        name: 'x',
        key: { last4: this.key.slice(-4) },
        teams,
        scopes: [],
      });
    }
    let bound: string;
    if (team !== undefined) {
      if (!this.teams.has(team)) return this.problem(res, 404, 'team_not_accessible');
      bound = team;
    } else if (teams.length === 1) bound = teams[0] as string;
    else return this.problem(res, 400, 'team_required');
    const d = this.data(bound);
    if (path === '/members')
      return this.json(res, { object: 'list', data: d.members, has_more: false, next_cursor: null });
    if (path === '/booking_services')
      return this.json(res, { object: 'list', data: d.services, has_more: false, next_cursor: null });
    if (path === '/boards') {
      const boards = [...this.current(bound).values()].filter((e) => e.kind === 'board').map((e) => e.object);
      return this.json(res, { object: 'list', data: boards, has_more: false, next_cursor: null });
    }
    if (path === '/sync/changes') {
      const cursor = url.searchParams.get('cursor');
      const limit = Number(url.searchParams.get('limit') ?? 25);
      let pos = 0;
      if (cursor !== null) {
        const m = /^cur_(team_[0-9A-Za-z]+)_(\d+)$/.exec(cursor);
        if (!m || m[1] !== bound) return this.problem(res, 400, 'invalid_request', {}, 'cursor');
        pos = Number(m[2]);
      }
      const take = Math.min(limit, this.maxPageItems);
      const data = d.log.slice(pos, pos + take);
      const next = pos + data.length;
      return this.json(res, {
        object: 'list',
        data,
        has_more: next < d.log.length,
        next_cursor: `cur_${bound}_${next}`,
      });
    }
    return this.problem(res, 404, 'resource_missing');
  }

  private json(res: ServerResponse, body: unknown): void {
    res.writeHead(200, { 'content-type': 'application/json', 'service-request-id': `req_${randomUUID()}` });
    res.end(JSON.stringify(body));
  }

  private problem(
    res: ServerResponse,
    status: number,
    code: string,
    headers: Record<string, string> = {},
    param?: string,
  ): void {
    const requestId = `req_${randomUUID()}`;
    const type = `https://docs.example/errors#${code}`;
    res.writeHead(status, { 'content-type': 'application/problem+json', 'service-request-id': requestId, ...headers });
    res.end(
      JSON.stringify({
        type,
        title: code,
        status,
        code,
        request_id: requestId,
        ...(param ? { param } : {}),
        doc_url: type,
      }),
    );
  }
}

export async function startFakeServer(teams: string[] = ['team_a']): Promise<FakeServer> {
  const fake = new FakeServer();
  for (const t of teams) fake.addTeam(t);
  return fake.start();
}

/** A lead object with every field present (null when empty). */
export function leadObject(id: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    object: 'lead',
    livemode: true,
    record_kind: 'lead',
    name: 'Ada',
    surname: null,
    email: null,
    company: null,
    phone: null,
    phone_status: 'missing',
    status: 'new',
    status_set_by: 'human',
    archive_reason: null,
    archived_from_status: null,
    contact_permissions: {
      do_not_contact: false,
      email_opt_out: false,
      email_opt_out_at: null,
      whatsapp_consent: null,
      provenance: { do_not_contact: null, email_opt_out: null, whatsapp_consent: null },
    },
    merged_into: null,
    transferred_to: null,
    board: null,
    stage: null,
    assignees: null,
    created_at: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}
