// Retries exactly as the spec's error table says: `Retry-After` on the API's 429 (`rate_limited`,
// `quota_exceeded`), exponential backoff with jitter on 500/503 (never shorter than a 503's `Retry-After`) and
// the firewall's plain 429, never on other 4xx.
import { ConnectionError, type CrmExportError, FirewallError, RateLimitError, ServerError } from './errors.js';

export interface RetryPolicy {
  /** Retries after the first attempt before the error reaches the caller. */
  maxRetries: number;
  /** First backoff step in milliseconds; doubles with every attempt. */
  baseDelayMs: number;
  /** Upper bound of one backoff step in milliseconds. */
  maxDelayMs: number;
  /** A longer `Retry-After` (a spent daily quota) is handed to the caller instead of slept through. */
  maxRetryAfterSeconds: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 5,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  maxRetryAfterSeconds: 120,
};

/** Exponential backoff with "equal jitter": half the step fixed, half random, so retries spread out. */
export function backoffMs(attempt: number, policy: RetryPolicy, random: () => number): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.round(step / 2 + random() * (step / 2));
}

/** Milliseconds to wait before retrying after `err` on attempt `attempt` (0-based), or null for no retry. */
export function retryDelayMs(
  err: CrmExportError,
  attempt: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number | null {
  if (attempt >= policy.maxRetries) return null;
  if (err instanceof RateLimitError) {
    if (err.retryAfter === null) return backoffMs(attempt, policy, random);
    return err.retryAfter <= policy.maxRetryAfterSeconds ? err.retryAfter * 1000 : null;
  }
  if (err instanceof FirewallError) return err.status === 429 ? backoffMs(attempt, policy, random) : null;
  // A dropped connection or timeout on a read-only API is safe to repeat: the same cursor asks for the same page.
  // A 503 may carry Retry-After (the database is away): the shortest sensible wait, backing off from there.
  if (err instanceof ServerError) {
    const backoff = backoffMs(attempt, policy, random);
    if (err.retryAfter === null) return backoff;
    return err.retryAfter <= policy.maxRetryAfterSeconds ? Math.max(err.retryAfter * 1000, backoff) : null;
  }
  if (err instanceof ConnectionError) return backoffMs(attempt, policy, random);
  return null;
}
