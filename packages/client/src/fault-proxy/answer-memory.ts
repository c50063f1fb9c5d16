// What `duplicate_page` serves again: the latest successful answer of each consumer's request, in a memory
// bounded by what it holds (keys, headers and bodies), oldest use forgotten first.
import { createHmac, randomBytes } from 'node:crypto';

export interface RememberedAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** What identifies "the same request" of one consumer. */
export interface AnswerRequest {
  method: string;
  /** Path and query as sent (`req.url`). */
  url: string;
  /** The `Authorization` header: only its digest is kept. */
  authorization: string | undefined;
  /** The `Service-Team` header. */
  team: string | undefined;
}

/** Default bound of the memory: enough for a few hundred feed pages of 100 items. */
export const DEFAULT_ANSWER_MEMORY_BYTES = 16 * 1024 * 1024;

/** Where a walk is and how much it asks for, not which walk it is. */
const PAGING_PARAMS = ['cursor', 'limit'];

/** A key is a hex HMAC-SHA-256: its size is fixed whatever the request's length. */
const KEY_BYTES = 64;

export class AnswerMemory {
  private readonly entries = new Map<string, { answer: RememberedAnswer; bytes: number }>();
  private held = 0;
  /** Drawn per memory: a digest says nothing about a key outside this process. */
  private readonly secret = randomBytes(32);

  constructor(readonly maxBytes: number = DEFAULT_ANSWER_MEMORY_BYTES) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new Error('maxBytes must be a whole number >= 0');
  }

  /**
   * One digest of the credential, method, path, query and team. The query's `cursor` and `limit` are left
   * out: a duplicate page is the previous page of the same walk (same endpoint, filters, team and key),
   * served for the request of the next one.
   */
  keyOf(request: AnswerRequest): string {
    const url = new URL(request.url, 'http://x');
    for (const paging of PAGING_PARAMS) url.searchParams.delete(paging);
    url.searchParams.sort();
    return createHmac('sha256', this.secret)
      .update([request.authorization ?? '', request.method, url.pathname, url.search, request.team ?? ''].join('\0'))
      .digest('hex');
  }

  get(key: string): RememberedAnswer | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    // Map order is the order of use: the oldest is first.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.answer;
  }

  /** Remembers `answer` under `key`, forgetting the least recently used answers until it fits. */
  set(key: string, answer: RememberedAnswer): void {
    this.forget(key);
    const bytes = KEY_BYTES + answer.body.length + headerBytes(answer.headers);
    // An answer larger than the whole memory is not kept (an older one under its key is gone too).
    if (bytes > this.maxBytes) return;
    while (this.held + bytes > this.maxBytes) {
      const oldest = this.entries.keys().next().value as string;
      this.forget(oldest);
    }
    this.entries.set(key, { answer, bytes });
    this.held += bytes;
  }

  /** Answers held and the bytes they count. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.held };
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.held -= entry.bytes;
  }
}

function headerBytes(headers: RememberedAnswer['headers']): number {
  let n = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    n += name.length;
    for (const v of Array.isArray(value) ? value : [value]) n += Buffer.byteLength(v);
  }
  return n;
}
