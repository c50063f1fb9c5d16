// The relay's side of the intake wire protocol (docs/intake.md): one POST per batch, one GET to resume.
// Every answer becomes one `PostOutcome` the relay acts on; the token is sent and never kept in a message.

export interface EventResult {
  seq: number;
  id?: string;
  outcome: 'applied' | 'duplicate' | 'quarantined' | 'rejected';
  code?: string;
  field?: string;
}

export type PostOutcome =
  /** Committed: the source's last applied seq and one result per event. */
  | { kind: 'committed'; lastSeq: number; results: EventResult[] }
  /** The batch does not follow what the service applied: resend from `lastSeq`. */
  | { kind: 'gap'; lastSeq: number }
  /** Try again later: 429, 503, another 5xx, a lost connection or a timeout. */
  | { kind: 'retry'; reason: string; retryAfterMs?: number }
  /** The batch as sent can never pass: `index` is the event at fault when the service named one. */
  | { kind: 'refused'; status: number; code: string; param?: string; index?: number }
  /** The token is refused: nothing will pass until the operator acts. */
  | { kind: 'unauthorized'; status: number; code: string };

export interface IntakeClientOptions {
  /** The internal listener's origin, e.g. http://127.0.0.1:3002. */
  url: string;
  token: string;
  /** Longest wait for an answer. */
  timeoutMs?: number;
}

interface Problem {
  code?: string;
  param?: string;
  last_seq?: number;
}

/** `Retry-After` in seconds (or an HTTP date) as milliseconds. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export class IntakeClient {
  private readonly base: string;
  private readonly auth: string;
  private readonly timeoutMs: number;

  constructor(options: IntakeClientOptions) {
    this.base = options.url.replace(/\/+$/, '');
    this.auth = `Bearer ${options.token}`;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** The source's last applied seq (0 for a source never seen), or the outcome that kept it from being read. */
  async lastSeq(source: string): Promise<number | Exclude<PostOutcome, { kind: 'committed' | 'gap' }>> {
    const answer = await this.request('GET', `/intake/v1/sources/${encodeURIComponent(source)}`);
    if ('kind' in answer) return answer;
    if (answer.status === 404) return 0;
    if (answer.status === 200) return Number((answer.body as { last_seq?: number }).last_seq ?? 0);
    return this.failure(answer.status, answer.body as Problem, answer.headers);
  }

  /** Posts one batch and classifies the answer. */
  async post(batch: { source: string; follows: number; events: unknown[] }): Promise<PostOutcome> {
    const answer = await this.request('POST', '/intake/v1/batches', JSON.stringify(batch));
    if ('kind' in answer) return answer;
    const body = answer.body as Problem & { last_seq?: number; results?: EventResult[] };
    if (answer.status === 200) {
      return { kind: 'committed', lastSeq: Number(body.last_seq), results: body.results ?? [] };
    }
    if (answer.status === 409 && body.code === 'sequence_gap' && typeof body.last_seq === 'number') {
      return { kind: 'gap', lastSeq: body.last_seq };
    }
    return this.failure(answer.status, body, answer.headers);
  }

  private failure(
    status: number,
    body: Problem,
    headers: Headers,
  ): Exclude<PostOutcome, { kind: 'committed' | 'gap' }> {
    const code = typeof body?.code === 'string' ? body.code : `http_${status}`;
    if (status === 401 || status === 403) return { kind: 'unauthorized', status, code };
    if (status === 429 || status >= 500) {
      const wait = retryAfterMs(headers.get('retry-after'));
      return { kind: 'retry', reason: `${status} ${code}`, ...(wait === undefined ? {} : { retryAfterMs: wait }) };
    }
    const index = /^events\[(\d+)\]/.exec(body?.param ?? '')?.[1];
    return {
      kind: 'refused',
      status,
      code,
      ...(typeof body?.param === 'string' ? { param: body.param } : {}),
      ...(index === undefined ? {} : { index: Number(index) }),
    };
  }

  private async request(
    method: 'GET' | 'POST',
    path: string,
    body?: string,
  ): Promise<{ status: number; body: unknown; headers: Headers } | Extract<PostOutcome, { kind: 'retry' }>> {
    try {
      const response = await fetch(`${this.base}${path}`, {
        method,
        headers: {
          authorization: this.auth,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const text = await response.text();
      let parsed: unknown = {};
      try {
        parsed = text === '' ? {} : JSON.parse(text);
      } catch {
        parsed = {};
      }
      return { status: response.status, body: parsed, headers: response.headers };
    } catch (error) {
      // No answer: the batch may or may not have committed. Sending it again is safe (duplicates).
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      const name = (error as Error).name === 'TimeoutError' ? 'timeout' : (cause ?? 'connection failed');
      return { kind: 'retry', reason: name };
    }
  }
}
