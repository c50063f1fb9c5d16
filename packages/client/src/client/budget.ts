// Pacing by the item budget headers (docs/limits.md, "Budget headers"): every successful list and feed answer
// says, in `RateLimit-Policy` and `RateLimit` (structured-field lists of the IETF RateLimit header fields
// draft), what the key's items this minute and today hold. The client remembers the latest figures, counts
// its own requests against them, and waits for a window to reset instead of asking and getting 429.
import type { HeaderGetter } from './errors.js';
import type { RouteName } from './routes.js';
import { ROUTES } from './routes.js';

/** The budgets the service names: items in the rate window, items in the UTC day. */
export const BUDGET_POLICIES = ['items-minute', 'items-day'] as const;
export type BudgetPolicy = (typeof BUDGET_POLICIES)[number];

/** What the client knows of one budget. */
export interface BudgetState {
  /** Items the budget allows per window (`q`), when `RateLimit-Policy` said. */
  quota: number | null;
  /** Window length in seconds (`w`), when said. */
  windowSeconds: number | null;
  /** Items left (`r`), minus what this client has asked for since. */
  remaining: number;
  /** When the window ends (epoch ms): the answer's time plus `t` seconds. */
  resetAt: number;
}

/** What a request sets aside: its items, and whether they count toward the day. */
export interface RequestCharge {
  items: number;
  countsTowardDay: boolean;
}

/** A wait the budget asks for before a request. */
export interface BudgetWait {
  policy: BudgetPolicy;
  /** Milliseconds until the window resets. */
  waitMs: number;
  /** Items the budget still holds. */
  remaining: number;
  /** Items the request would set aside. */
  needed: number;
}

/** Items each never-paged list sets aside (the service's fixed allowance). */
const NEVER_PAGED_ITEMS = 100;
const DEFAULT_PAGE = 25;

/** What a request to `route` sets aside, or null for the read class (single records, `/me`, `/health`). */
export function chargeOf(route: RouteName, limit: number | undefined): RequestCharge | null {
  const kind = ROUTES[route].kind;
  if (kind === 'single') return null;
  if (kind === 'list') return { items: NEVER_PAGED_ITEMS, countsTowardDay: true };
  return { items: limit ?? DEFAULT_PAGE, countsTowardDay: route !== 'searchLeads' };
}

/** Parameters of each member of a structured-field list, by name: `"a";x=1;y=2, "b";x=3`. */
export function parseBudgetList(value: string | null): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>();
  if (!value) return out;
  for (const member of value.split(',')) {
    const [rawName, ...params] = member.trim().split(';');
    const name =
      /^"([^"\\]*)"$/.exec(rawName ?? '')?.[1] ??
      (rawName && /^[A-Za-z*][\w:/!#$%&'*+.^`|~-]*$/.test(rawName) ? rawName : undefined);
    if (name === undefined) continue;
    const fields: Record<string, number> = {};
    for (const param of params) {
      const [key, raw] = param.trim().split('=');
      if (key && raw !== undefined && /^-?\d+$/.test(raw)) fields[key] = Number(raw);
    }
    out.set(name, fields);
  }
  return out;
}

/** The key's item budgets as the latest answers told them; shared by every client of one key. */
export class ItemBudget {
  private readonly states = new Map<BudgetPolicy, BudgetState>();

  /** `clock`: the time in epoch ms (tests pass their own). */
  constructor(private readonly clock: () => number = Date.now) {}

  /** Takes the figures of an answer's `RateLimit-Policy` and `RateLimit` headers, when it has them. */
  update(headers: HeaderGetter, now = this.clock()): void {
    const current = parseBudgetList(headers.get('ratelimit'));
    if (current.size === 0) return;
    const policies = parseBudgetList(headers.get('ratelimit-policy'));
    for (const policy of BUDGET_POLICIES) {
      const figures = current.get(policy);
      if (figures?.r === undefined || figures.t === undefined) continue;
      const shape = policies.get(policy);
      this.states.set(policy, {
        quota: shape?.q ?? null,
        windowSeconds: shape?.w ?? null,
        remaining: Math.max(0, figures.r),
        resetAt: now + Math.max(0, figures.t) * 1000,
      });
    }
  }

  /** What is known of `policy`, or undefined once its window has ended (nothing known then). */
  state(policy: BudgetPolicy, now = this.clock()): BudgetState | undefined {
    const state = this.states.get(policy);
    if (state && state.resetAt <= now) {
      this.states.delete(policy);
      return undefined;
    }
    return state;
  }

  /**
   * The wait a request needs, by the service's own rules: the minute serves a request while what it sets
   * aside (at most the whole allowance) fits in what is left; the day serves while anything is left.
   */
  waitFor(charge: RequestCharge, now = this.clock()): BudgetWait | null {
    const day = charge.countsTowardDay ? this.state('items-day', now) : undefined;
    if (day && day.remaining <= 0) {
      return { policy: 'items-day', waitMs: day.resetAt - now, remaining: day.remaining, needed: charge.items };
    }
    const minute = this.state('items-minute', now);
    if (minute) {
      const needed = Math.min(charge.items, minute.quota ?? charge.items);
      if (minute.remaining < needed) {
        return { policy: 'items-minute', waitMs: minute.resetAt - now, remaining: minute.remaining, needed };
      }
    }
    return null;
  }

  /** Counts a request about to be sent against what is known, until its answer brings new figures. */
  take(charge: RequestCharge, now = this.clock()): void {
    const minute = this.state('items-minute', now);
    if (minute) minute.remaining = Math.max(0, minute.remaining - Math.min(charge.items, minute.quota ?? charge.items));
    const day = charge.countsTowardDay ? this.state('items-day', now) : undefined;
    if (day) day.remaining = Math.max(0, day.remaining - charge.items);
  }
}
