// How a CrmExportClient is set up: its options, and what it reports before a pacing wait.
import type { BudgetWait, ItemBudget } from './budget.js';
import type { CrmExportError } from './errors.js';
import type { RetryPolicy } from './retry.js';
import type { RouteName } from './routes.js';
import type { Transport } from './transport.js';

export interface ClientOptions {
  /** Service address including its version segment, e.g. `https://host/v1`. */
  baseUrl: string;
  /** Secret API key; sent as `Authorization: Bearer`, never logged. Not needed for `health()`. */
  key?: string;
  /** Default `Service-Team` for endpoints that read one team's data (needed when the key reads several). */
  team?: string;
  /** Abort a request after this many milliseconds (default 30 s). */
  timeoutMs?: number;
  /** Retry policy overrides. */
  retry?: Partial<RetryPolicy>;
  /** Network layer (default: Node's fetch). */
  transport?: Transport;
  /** Hard cap on pages an auto-paging iterator follows (default 100,000). */
  maxPages?: number;
  /** Called before each retry, e.g. for logging. */
  onRetry?: (info: { route: RouteName; attempt: number; delayMs: number; error: CrmExportError }) => void;
  /**
   * Pace list and feed requests by the item budget headers (`RateLimit`): wait for a spent window to reset
   * instead of asking and getting 429. Default true.
   */
  pace?: boolean;
  /**
   * A longer pacing wait (a spent daily quota) is not slept through: the request fails at once with a
   * `BudgetSpentError` carrying the seconds to wait. Default 120.
   */
  maxPaceWaitSeconds?: number;
  /** Called before each pacing wait, e.g. for logging or a status line. */
  onPace?: (info: PaceInfo) => void;
  /** The budget figures of the key, shared by clients of one key (`forTeam` passes its own on). */
  budget?: ItemBudget;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  /** Injected for tests: jitter source in [0, 1). */
  random?: () => number;
}

/** A pacing wait: the route about to be asked, the budget that is short, and for how long. */
export interface PaceInfo extends BudgetWait {
  route: RouteName;
  /** The request's `Service-Team`, when it names one. */
  team?: string;
}
