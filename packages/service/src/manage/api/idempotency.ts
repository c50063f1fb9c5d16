import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { getPepper } from '../../access/keys.js';
import { ApiError } from '../../errors/catalogue.js';
import type { Store } from '../../store/store.js';
import { runCommand } from '../../write/commands/commands.js';

// Idempotency-Key on every POST of the management API (docs/management.md, "Idempotency"), after the IETF
// draft: the first request with a key runs and its answer is kept 24 hours; the same key with the same request
// answers that answer again; with another request, 422 idempotency_key_reused; while the first still runs,
// 409 idempotency_key_in_use. Keys belong to the token that sent them.
//
// Stored: a digest of the key, a digest of the request, and the answer sealed (AES-256-GCM) under a key
// derived from the server pepper and the Idempotency-Key itself. A create's answer holds the new API key:
// whoever reads the database without the Idempotency-Key cannot open it.

export const IDEMPOTENCY_WINDOW_MS = 24 * 3_600_000;
/** What an Idempotency-Key may be: 1 to 255 visible ASCII characters. */
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

/** An answer as stored and replayed. */
export interface StoredAnswer {
  status: number;
  contentType: string;
  body: string;
}

/** When each store's expired keys were last dropped; at most once an hour per process. */
const trimmedAt = new WeakMap<Store, number>();
const TRIM_EVERY_MS = 3_600_000;

/** Drops keys past the window in the background (each claim also forgets its own expired key). */
function trimNow(store: Store, now: number): void {
  if (now - (trimmedAt.get(store) ?? 0) < TRIM_EVERY_MS) return;
  trimmedAt.set(store, now);
  runCommand(store, 'idempotency.trim', { before: now - IDEMPOTENCY_WINDOW_MS }).catch(() => {
    // Tried again an hour later; a key past its window is refused nothing meanwhile.
  });
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** One request's claim on its key. */
export class IdempotencyClaim {
  private constructor(
    private readonly store: Store,
    private readonly owner: string,
    private readonly key: string,
    private readonly digest: string,
    private readonly secret: Buffer,
  ) {}

  /**
   * Claims `header` for `owner` and this request, or answers for it: the stored answer (a replay), or throws
   * 422/409. Returns undefined when the request carries no key.
   */
  static async claim(
    store: Store,
    now: number,
    owner: string,
    header: string | string[] | undefined,
    request: { method: string; url: string; body: unknown },
  ): Promise<{ claim: IdempotencyClaim } | { replay: StoredAnswer } | undefined> {
    if (header === undefined) return undefined;
    if (Array.isArray(header) || !KEY_SHAPE.test(header))
      throw new ApiError('invalid_request', { param: 'Idempotency-Key' });
    const key = sha256(header);
    const digest = sha256(`${request.method} ${request.url}\n${JSON.stringify(request.body ?? null)}`);
    const secret = createHmac('sha256', await getPepper(store))
      .update(`idempotency\0${owner}\0${header}`, 'utf8')
      .digest();
    trimNow(store, now);
    const claimed = await runCommand(store, 'idempotency.claim', {
      row: { owner, key, digest, createdAt: now },
      expiredBefore: now - IDEMPOTENCY_WINDOW_MS,
    });
    if (claimed.claimed) return { claim: new IdempotencyClaim(store, owner, key, digest, secret) };
    const { row } = claimed;
    if (row.digest !== digest) throw new ApiError('idempotency_key_reused', { param: 'Idempotency-Key' });
    if (row.state === 'running' || row.answer === null)
      throw new ApiError('idempotency_key_in_use', { param: 'Idempotency-Key' });
    return { replay: open(secret, row.answer) };
  }

  /** Keeps the answer for the key's next uses. */
  async finish(answer: StoredAnswer): Promise<void> {
    await runCommand(this.store, 'idempotency.finish', {
      owner: this.owner,
      key: this.key,
      digest: this.digest,
      status: answer.status,
      answer: seal(this.secret, answer),
    });
  }

  /** Frees the key: the request failed in a way worth trying again (a fault of the service). */
  async release(): Promise<void> {
    await runCommand(this.store, 'idempotency.release', { owner: this.owner, key: this.key, digest: this.digest });
  }
}

function seal(secret: Buffer, answer: StoredAnswer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', secret, iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(answer), 'utf8'), cipher.final()]);
  return [iv, cipher.getAuthTag(), data].map((b) => b.toString('base64')).join('.');
}

function open(secret: Buffer, sealed: string): StoredAnswer {
  const [iv, tag, data] = sealed.split('.').map((part) => Buffer.from(part, 'base64'));
  const decipher = createDecipheriv('aes-256-gcm', secret, iv as Buffer);
  decipher.setAuthTag(tag as Buffer);
  return JSON.parse(Buffer.concat([decipher.update(data as Buffer), decipher.final()]).toString('utf8'));
}
