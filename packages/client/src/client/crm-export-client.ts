// The typed client: one method per endpoint, and the request loop that paces, sends and retries.
import { autoPage } from './auto-page.js';
import { chargeOf, ItemBudget } from './budget.js';
import type { ClientOptions, PaceInfo } from './client-options.js';
import type {
  ChangesParams,
  LeadFilterParams,
  LeadsParams,
  PageParams,
  SearchLeadsParams,
  TeamOption,
} from './endpoint-params.js';
import { BudgetSpentError, type CrmExportError, InvalidRequestError } from './errors.js';
import { parseResponse } from './parse-response.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, retryDelayMs } from './retry.js';
import { ROUTES, type RouteName } from './routes.js';
import { FetchTransport, type Transport } from './transport.js';
import type {
  Activity,
  Board,
  Booking,
  BookingService,
  Call,
  Conversation,
  FeedPage,
  Health,
  Integration,
  Lead,
  LeadDetail,
  ListPage,
  Member,
  Team,
} from './types.js';

interface CallArgs {
  id?: string;
  team?: string;
  query?: Record<string, string | number | undefined>;
  body?: Record<string, unknown>;
}

const TEAM_ID = /^team_[0-9A-Za-z]+$/;
const sleepReal = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Typed client for every endpoint of the export API. */
export class CrmExportClient {
  readonly options: Readonly<ClientOptions>;
  private readonly policy: RetryPolicy;
  private readonly transport: Transport;
  private readonly baseUrl: string;
  /** The key's item budgets as the latest answers told them (docs/client.md, "Pacing"). */
  readonly budget: ItemBudget;
  private readonly paceListeners = new Set<(info: PaceInfo) => void>();

  constructor(options: ClientOptions) {
    this.budget = options.budget ?? new ItemBudget();
    this.options = { ...options, budget: this.budget };
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.transport = options.transport ?? new FetchTransport();
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    if (options.team !== undefined) assertTeam(options.team);
  }

  /** The same client with `Service-Team` set to `team` (one client per team of a multi-team key). */
  forTeam(team: string): CrmExportClient {
    return new CrmExportClient({ ...this.options, team });
  }

  /** Calls `listener` before each pacing wait (as `onPace` does); returns the function that stops it. */
  onBudgetWait(listener: (info: PaceInfo) => void): () => void {
    this.paceListeners.add(listener);
    return () => this.paceListeners.delete(listener);
  }

  me(): Promise<Integration> {
    return this.request('me');
  }
  teams(): Promise<ListPage<Team>> {
    return this.request('teams');
  }
  team(id: string): Promise<Team> {
    return this.request('team', { id });
  }
  members(params: TeamOption = {}): Promise<ListPage<Member>> {
    return this.request('members', { team: params.team });
  }
  boards(params: PageParams = {}): Promise<ListPage<Board>> {
    return this.request('boards', paged(params));
  }
  bookingServices(params: TeamOption = {}): Promise<ListPage<BookingService>> {
    return this.request('bookingServices', { team: params.team });
  }
  leads(params: LeadsParams = {}): Promise<ListPage<Lead>> {
    const { board, stage, status } = params;
    return this.request('leads', paged(params, { board, stage, status }));
  }
  lead(id: string): Promise<LeadDetail> {
    return this.request('lead', { id });
  }
  searchLeads(params: SearchLeadsParams): Promise<ListPage<Lead>> {
    const { team, ...body } = params;
    const clean = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
    return this.request('searchLeads', { team, body: clean });
  }
  leadActivities(id: string, params: Omit<PageParams, 'team'> = {}): Promise<ListPage<Activity>> {
    return this.request('leadActivities', { id, query: { limit: params.limit, cursor: params.cursor } });
  }
  calls(params: LeadFilterParams = {}): Promise<ListPage<Call>> {
    return this.request('calls', paged(params, { lead: params.lead }));
  }
  call(id: string): Promise<Call> {
    return this.request('call', { id });
  }
  conversations(params: LeadFilterParams = {}): Promise<ListPage<Conversation>> {
    return this.request('conversations', paged(params, { lead: params.lead }));
  }
  conversation(id: string): Promise<Conversation> {
    return this.request('conversation', { id });
  }
  bookings(params: LeadFilterParams = {}): Promise<ListPage<Booking>> {
    return this.request('bookings', paged(params, { lead: params.lead }));
  }
  booking(id: string): Promise<Booking> {
    return this.request('booking', { id });
  }
  /** One page of the changes feed; `next_cursor` is always present. */
  changes(params: ChangesParams = {}): Promise<FeedPage> {
    return this.request('changes', { team: params.team, query: { cursor: params.cursor, limit: params.limit } });
  }
  health(): Promise<Health> {
    return this.request('health');
  }

  /** Auto-paging iterators: follow `has_more` (even on short pages) up to the hard cap of pages. */
  readonly iterate = {
    boards: (p: PageParams = {}) => this.pages((cursor) => this.boards({ ...p, cursor })),
    leads: (p: LeadsParams = {}) => this.pages((cursor) => this.leads({ ...p, cursor })),
    searchLeads: (p: SearchLeadsParams) => this.pages((cursor) => this.searchLeads({ ...p, cursor })),
    leadActivities: (id: string, p: Omit<PageParams, 'team'> = {}) =>
      this.pages((cursor) => this.leadActivities(id, { ...p, cursor })),
    calls: (p: LeadFilterParams = {}) => this.pages((cursor) => this.calls({ ...p, cursor })),
    conversations: (p: LeadFilterParams = {}) => this.pages((cursor) => this.conversations({ ...p, cursor })),
    bookings: (p: LeadFilterParams = {}) => this.pages((cursor) => this.bookings({ ...p, cursor })),
  };

  private pages<T>(fetchPage: (cursor: string | undefined) => Promise<ListPage<T>>): AsyncGenerator<T> {
    return autoPage(fetchPage, this.options.maxPages ?? 100_000);
  }

  /** Sends the request for `name`, retrying as the spec's error table says. */
  async request<T>(name: RouteName, args: CallArgs = {}): Promise<T> {
    const route = ROUTES[name];
    let path: string = route.path;
    if (path.includes('{id}')) {
      if (!args.id) throw new TypeError(`${name} needs an id`);
      path = path.replace('{id}', encodeURIComponent(args.id));
    }
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(args.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json' };
    if (route.auth) {
      if (!this.options.key) throw new TypeError('an API key is required');
      headers.authorization = `Bearer ${this.options.key}`;
    }
    const team = args.team ?? this.options.team;
    if (route.team === 'header' && team !== undefined) {
      assertTeam(team);
      headers['service-team'] = team;
    }
    let body: string | undefined;
    if (route.method === 'POST') {
      body = JSON.stringify(args.body ?? {});
      headers['content-type'] = 'application/json';
    }
    const sleep = this.options.sleep ?? sleepReal;
    const limit = (args.query?.limit ?? args.body?.limit) as number | undefined;
    const charge = route.auth ? chargeOf(name, limit) : null;
    for (let attempt = 0; ; attempt++) {
      let error: CrmExportError;
      if (charge && this.options.pace !== false) {
        await this.pace(name, team, charge, sleep);
        this.budget.take(charge);
      }
      try {
        const res = await this.transport.send({
          method: route.method,
          url: url.toString(),
          headers,
          body,
          timeoutMs: this.options.timeoutMs ?? 30_000,
        });
        this.budget.update(res.headers);
        return parseResponse<T>(res);
      } catch (err) {
        if (!(err instanceof Error) || !('status' in err)) throw err;
        error = err as CrmExportError;
      }
      const delayMs = retryDelayMs(error, attempt, this.policy, this.options.random);
      if (delayMs === null) throw error;
      this.options.onRetry?.({ route: name, attempt: attempt + 1, delayMs, error });
      await sleep(delayMs);
    }
  }

  /** Waits while the known budget is short of what the request sets aside; a wait too long to sleep fails. */
  private async pace(
    route: RouteName,
    team: string | undefined,
    charge: ReturnType<typeof chargeOf> & object,
    sleep: (ms: number) => Promise<void>,
  ) {
    for (;;) {
      const wait = this.budget.waitFor(charge);
      if (!wait) return;
      const seconds = Math.ceil(wait.waitMs / 1000);
      if (seconds > (this.options.maxPaceWaitSeconds ?? 120)) {
        const what =
          wait.policy === 'items-day' ? 'the daily item quota is spent' : 'the items of this window are spent';
        throw new BudgetSpentError(`${ROUTES[route].path}: ${what} (RateLimit); it resets in ${seconds} s`, {
          status: 0,
          code: wait.policy === 'items-day' ? 'quota_exceeded' : 'rate_limited',
          requestId: null,
          param: null,
          retryAfter: seconds,
        });
      }
      const info: PaceInfo = { route, ...(team === undefined ? {} : { team }), ...wait };
      this.options.onPace?.(info);
      for (const listener of this.paceListeners) listener(info);
      await sleep(wait.waitMs);
    }
  }
}

function paged(params: PageParams, filters: Record<string, string | undefined> = {}): CallArgs {
  return { team: params.team, query: { limit: params.limit, cursor: params.cursor, ...filters } };
}

function assertTeam(team: string): void {
  if (!TEAM_ID.test(team)) {
    throw new InvalidRequestError('Service-Team must be a team_ id', {
      status: 0,
      code: 'invalid_request',
      requestId: null,
      param: 'Service-Team',
      retryAfter: null,
    });
  }
}
