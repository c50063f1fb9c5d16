// Database faults that pass: the one place that tells a temporary driver error (a lost connection, a
// database that refuses sessions for now, a pool or statement out of time) from a permanent one (a bug).
// Each backend runs the errors of its own driver calls through `toStoreError`, so only errors that came
// from the database become `StoreUnavailableError`; the HTTP layer answers those with 503
// service_unavailable and Retry-After, everything else with 500 internal_error (docs/errors.md).

/**
 * Why the database cannot serve the call right now:
 * - `connection_lost`: the connection ended or could not be made (terminated backend, failover, network);
 *   the pool opens a new connection for the next call.
 * - `busy`: out of capacity for now (no free pooled connection in time, statement timeout, too many
 *   connections, a locked SQLite file).
 * - `not_ready`: the database refuses work for a while (starting up, in recovery, read-only after a
 *   failover, database missing, disk full or failing).
 * - `closed`: the store was closed (the process is shutting down).
 */
export type UnavailableReason = 'connection_lost' | 'busy' | 'not_ready' | 'closed';

/** Seconds a client is told to wait (`Retry-After`) for each reason. */
export const RETRY_AFTER_SECONDS: Record<UnavailableReason, number> = {
  connection_lost: 1,
  busy: 2,
  not_ready: 5,
  closed: 5,
};

/** A database call failed for a reason that passes; the same call can succeed later. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';

  constructor(
    readonly reason: UnavailableReason,
    /** The driver's code (SQLSTATE, socket errno, SQLite code) when it gave one; for logs. */
    readonly code?: string,
    options?: { cause?: unknown },
  ) {
    super(`database unavailable: ${reason.replace('_', ' ')}${code ? ` (${code})` : ''}`, options);
  }

  /** Whole seconds for `Retry-After`. */
  get retryAfterSeconds(): number {
    return RETRY_AFTER_SECONDS[this.reason];
  }
}

/** Where the error arose: opening a pooled connection, or a statement on an open one. */
export type DriverStage = 'connect' | 'query';

/** Errors of the Node socket under a driver: the peer or the network went away. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** PostgreSQL SQLSTATEs of passing states outside the classes handled as a whole (08, 53, 57). */
const POSTGRES_CODES: Record<string, UnavailableReason> = {
  // invalid_catalog_name: the database is missing, as while it is being restored or recreated.
  '3D000': 'not_ready',
  // read_only_sql_transaction: connected to a standby that is not promoted yet (failover).
  '25006': 'not_ready',
  // idle_in_transaction_session_timeout ended the session.
  '25P03': 'connection_lost',
  // lock_not_available: a lock wait gave up.
  '55P03': 'busy',
};

/** Messages of node-postgres and pg-pool errors that carry no code. */
const POSTGRES_MESSAGES: [RegExp, UnavailableReason][] = [
  // The socket closed under the client (also "... due to connection timeout" while connecting).
  [/^Connection terminated/, 'connection_lost'],
  [/^Client has encountered a connection error and is not queryable/, 'connection_lost'],
  // pg-pool: every connection in use and none freed within connectionTimeoutMillis.
  [/^timeout exceeded when trying to connect/, 'busy'],
  [/^Query read timeout/, 'busy'],
  [/^Cannot use a pool after calling end on the pool/, 'closed'],
];

/** A SQLite result code (better-sqlite3 puts the extended one, such as SQLITE_IOERR_WRITE, in `code`). */
function sqliteReason(code: string): UnavailableReason | undefined {
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'busy';
  if (code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_CANTOPEN') || code === 'SQLITE_FULL') {
    return 'not_ready';
  }
  return undefined;
}

function postgresReason(code: string, stage: DriverStage): UnavailableReason | undefined {
  // Class 08, connection exception.
  if (code.startsWith('08')) return 'connection_lost';
  // Class 53, insufficient resources: too many connections, out of memory, disk full.
  if (code.startsWith('53')) return 'busy';
  // Class 57, operator intervention.
  if (code === '57014') return 'busy'; // query_canceled: here only the statement timeout cancels
  if (code === '57P03') return 'not_ready'; // cannot_connect_now: starting up, shutting down, in recovery
  if (code.startsWith('57')) return 'connection_lost'; // admin or crash shutdown, a terminated backend
  // object_not_in_prerequisite_state refuses a session only while connecting (a database not accepting
  // connections); raised by a statement it names a bug.
  if (code === '55000') return stage === 'connect' ? 'not_ready' : undefined;
  return POSTGRES_CODES[code];
}

/** The reason a driver error passes, or undefined when it does not (it stays an internal error). */
export function unavailableReason(error: unknown, stage: DriverStage = 'query'): UnavailableReason | undefined {
  if (error instanceof StoreUnavailableError) return error.reason;
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (SOCKET_CODES.has(code)) return 'connection_lost';
    if (code.startsWith('SQLITE_')) return sqliteReason(code);
    if (/^[0-9A-Z]{5}$/.test(code)) return postgresReason(code, stage);
  }
  if (typeof message === 'string') {
    for (const [pattern, reason] of POSTGRES_MESSAGES) if (pattern.test(message)) return reason;
    // better-sqlite3 after its database was closed.
    if (error instanceof TypeError && /database connection is not open/.test(message)) return 'closed';
  }
  return undefined;
}

/**
 * The error a store call rejects with for `error` from its driver: a `StoreUnavailableError` (the driver
 * error as its cause) when the failure passes, else `error` unchanged.
 */
export function toStoreError(error: unknown, stage: DriverStage = 'query'): unknown {
  if (error instanceof StoreUnavailableError) return error;
  const reason = unavailableReason(error, stage);
  if (reason === undefined) return error;
  const code = (error as { code?: unknown }).code;
  return new StoreUnavailableError(reason, typeof code === 'string' ? code : undefined, { cause: error });
}
