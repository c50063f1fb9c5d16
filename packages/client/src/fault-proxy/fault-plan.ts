// Which fault the proxy injects into which request: a programmable script, or random with a seed so a
// failing run can be replayed exactly.

export const FAULT_KINDS = [
  /**
   * Serve the previous response of the same walk again instead of forwarding: same key, method, path,
   * filters and team (`cursor` and `limit` aside).
   */
  'duplicate_page',
  /** Forward, let the server answer, then close the socket without passing the answer on. */
  'drop_response',
  /** 429 `rate_limited` with `Retry-After`. */
  'rate_limited',
  /** 429 `quota_exceeded` with `Retry-After`. */
  'quota_exceeded',
  /** 500 `internal_error`. */
  'internal_error',
  /** 503 `service_unavailable`. */
  'service_unavailable',
  /** The firewall's plain 429: no JSON, no `Retry-After`, no `Service-Request-Id`. */
  'firewall_429',
  /** 410 `sync_cursor_expired`. */
  'sync_cursor_expired',
  /** 409 `resync_required`. */
  'resync_required',
  /** 409 `capture_not_ready`. */
  'capture_not_ready',
  /** Wait `delayMs`, then forward. */
  'delay',
  /** Close the connection before forwarding anything. */
  'cut_connection',
  /** 404 `team_not_accessible`: the key no longer reads the team named in `Service-Team`. */
  'team_not_accessible',
  /** Forward, then pass on the status, the headers and half the body, and reset the connection. */
  'cut_mid_body',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Faults that only make sense on the changes feed. */
export const FEED_ONLY_FAULTS: readonly FaultKind[] = ['sync_cursor_expired', 'resync_required', 'capture_not_ready'];

/**
 * Faults a random plan never draws unless asked for by name: `team_not_accessible` is not a passing fault
 * a consumer retries or resyncs away but a change of what the key reads (the torture kit scripts it);
 * `cut_mid_body` came after random plans' seeds were in use, and a seed keeps drawing what it drew.
 */
export const SCRIPTED_ONLY_FAULTS: readonly FaultKind[] = ['team_not_accessible', 'cut_mid_body'];

export interface Fault {
  kind: FaultKind;
  /** For `delay` (default 200 ms). */
  delayMs?: number;
  /**
   * `Retry-After` seconds for `rate_limited` / `quota_exceeded` (default 1); on `internal_error` and
   * `service_unavailable` only when set.
   */
  retryAfter?: number;
}

export interface FaultRequest {
  method: string;
  /** Path without the query string, e.g. `/v1/sync/changes`. */
  path: string;
  /** The `Service-Team` header, when the request carries one. */
  team?: string;
  /** The query string as sent (`?limit=100&cursor=...`), or empty. */
  query?: string;
}

export interface FaultPlan {
  /** The fault for this request, or null to pass it through untouched. */
  next(request: FaultRequest): Fault | null;
}

export interface ScriptStep {
  /** Only requests whose path ends with this (default: any request). */
  path?: string;
  /** The fault, or null to let one matching request through. */
  fault: Fault | null;
}

/** Applies the steps in order, each to the next matching request; passes everything through afterwards. */
export function scriptedPlan(steps: ScriptStep[]): FaultPlan & { remaining(): number } {
  const queue = [...steps];
  return {
    next(request) {
      const i = queue.findIndex((s) => s.path === undefined || request.path.endsWith(s.path));
      if (i < 0) return null;
      const [step] = queue.splice(i, 1);
      return step?.fault ?? null;
    },
    remaining: () => queue.length,
  };
}

export interface RandomPlanOptions {
  /** Seed of the pseudo-random generator: the same seed gives the same faults in the same order. */
  seed: number;
  /** Share of requests that get a fault, 0 to 1. */
  rate: number;
  /**
   * Faults to choose from (default: all but `SCRIPTED_ONLY_FAULTS`). Feed-only faults are used on
   * `/sync/changes` only.
   */
  kinds?: readonly FaultKind[];
  /** Delay for `delay` faults. */
  delayMs?: number;
  /** `Retry-After` seconds for 429 faults. */
  retryAfter?: number;
}

/** mulberry32: tiny, fast and good enough to spread faults. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomPlan(options: RandomPlanOptions): FaultPlan {
  const random = seededRandom(options.seed);
  const kinds = options.kinds ?? FAULT_KINDS.filter((k) => !SCRIPTED_ONLY_FAULTS.includes(k));
  return {
    next(request) {
      if (random() >= options.rate) return null;
      const onFeed = request.path.endsWith('/sync/changes');
      const usable = kinds.filter((k) => onFeed || !FEED_ONLY_FAULTS.includes(k));
      if (usable.length === 0) return null;
      const kind = usable[Math.floor(random() * usable.length)] as FaultKind;
      return { kind, delayMs: options.delayMs, retryAfter: options.retryAfter };
    },
  };
}
