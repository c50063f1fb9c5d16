// The management API's idempotency keys (migration 0007_management, docs/management.md): one row per
// caller and key, holding the digest of the first request's body and, once it finished, its answer.

/** A stored idempotency key. `answer` is the sealed answer (manage/api/idempotency.ts), null while running. */
export interface IdempotencyRow {
  /** The caller: the operator token's name. */
  owner: string;
  /** A digest of the Idempotency-Key header, never the header itself. */
  key: string;
  /** A digest of the request (method, path, body). */
  digest: string;
  state: 'running' | 'done';
  status: number | null;
  answer: string | null;
  /** Epoch ms. */
  createdAt: number;
}

/** What `Store.claimIdempotency` answers: the key is now ours, or the row a request stored before. */
export type IdempotencyClaim = { claimed: true } | { claimed: false; row: IdempotencyRow };
