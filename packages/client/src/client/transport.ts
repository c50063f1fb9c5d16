// The transport is the only part that touches the network, so tests and customers can swap it.
import { ConnectionError, type HeaderGetter } from './errors.js';

export interface TransportRequest {
  /** HTTP method. */
  method: 'GET' | 'POST';
  /** Absolute URL including the query string. */
  url: string;
  /** Request headers. */
  headers: Record<string, string>;
  /** JSON text for POST, else undefined. */
  body?: string;
  /** Abort the request after this many milliseconds. */
  timeoutMs: number;
}

export interface TransportResponse {
  /** HTTP status. */
  status: number;
  /** Response headers, case-insensitive. */
  headers: HeaderGetter;
  /** The whole body as text. */
  text: string;
}

export interface Transport {
  /** Sends one request; throws `ConnectionError` when no complete answer arrives. */
  send(request: TransportRequest): Promise<TransportResponse>;
}

/** Node's built-in fetch with a per-request timeout through `AbortSignal`. */
export class FetchTransport implements Transport {
  async send(request: TransportRequest): Promise<TransportResponse> {
    try {
      const res = await fetch(request.url, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        signal: AbortSignal.timeout(request.timeoutMs),
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text };
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      const reason = timedOut ? `timed out after ${request.timeoutMs} ms` : describe(err);
      return Promise.reject(
        new ConnectionError(`${request.method} ${new URL(request.url).pathname}: ${reason}`, {
          status: 0,
          code: null,
          requestId: null,
          param: null,
          retryAfter: null,
        }),
      );
    }
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  }
  return String(err);
}
