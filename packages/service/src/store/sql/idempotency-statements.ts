import type { IdempotencyRow } from '../idempotency-types.js';
import { type Dialect, numberedPlaceholders } from './dialect.js';
import { asNumber, type Row } from './rows.js';

// The statements of the management API's idempotency keys (migration 0007_management), both backends.

export function idempotencyStatementsFor(d: Dialect) {
  const text = d.backend === 'postgres' ? numberedPlaceholders : (s: string) => s;
  return {
    /** Forgets the key when it was stored before `?` (expired), so it can be claimed again. */
    dropExpired: text('DELETE FROM idempotency_keys WHERE owner = ? AND key = ? AND created_at < ?'),
    claim: text(`INSERT INTO idempotency_keys (owner, key, digest, state, status, answer, created_at)
      VALUES (?, ?, ?, 'running', NULL, NULL, ?) ON CONFLICT (owner, key) DO NOTHING`),
    read: text(
      'SELECT owner, key, digest, state, status, answer, created_at FROM idempotency_keys WHERE owner = ? AND key = ?',
    ),
    finish: text(
      "UPDATE idempotency_keys SET state = 'done', status = ?, answer = ? WHERE owner = ? AND key = ? AND digest = ?",
    ),
    release: text('DELETE FROM idempotency_keys WHERE owner = ? AND key = ? AND digest = ?'),
    /** A batch of expired keys (stored before `?`), at most `?` rows. */
    trim: text(`DELETE FROM idempotency_keys WHERE ${d.addressIn}SELECT ${d.rowAddress} FROM idempotency_keys
      WHERE created_at < ? ORDER BY created_at ${d.limit}?${d.addressInEnd}`),
  };
}

export type IdempotencyStatements = ReturnType<typeof idempotencyStatementsFor>;

export function toIdempotencyRow(row: Row): IdempotencyRow {
  return {
    owner: row.owner as string,
    key: row.key as string,
    digest: row.digest as string,
    state: row.state as IdempotencyRow['state'],
    status: row.status === null || row.status === undefined ? null : asNumber(row.status),
    answer: (row.answer as string | null) ?? null,
    createdAt: asNumber(row.created_at),
  };
}
