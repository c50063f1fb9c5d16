// Rule 3: one sync process per key and team. A lock row holds the owner and a heartbeat; a second
// process gets a clear error. A lock whose heartbeat is stale, or whose owner process on this host is
// gone (killed), is taken over. Each write of the team's data proves in its own transaction that the
// row still names this owner (`holdIn`), so a process that stalled past the staleness and lost the lock
// can never commit after the one that took it over.
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { Kysely, Transaction } from 'kysely';
import type { MirrorDatabase } from './mirror-schema.js';

export class SyncLockError extends Error {
  constructor(
    readonly team: string,
    readonly owner: string,
    readonly heartbeatAt: string,
  ) {
    super(
      `another sync process (${owner}) is syncing ${team} with this key (heartbeat ${heartbeatAt}); ` +
        'only one sync process per key and team may run',
    );
    this.name = 'SyncLockError';
  }
}

/** This process no longer holds the team's lock: another one took it over, so nothing more is written. */
export class SyncLockLostError extends Error {
  constructor(readonly team: string) {
    super(
      `lost the sync lock for ${team} to another process (this one stalled past the lock's staleness); ` +
        'its last write was not committed',
    );
    this.name = 'SyncLockLostError';
  }
}

/** The key itself is never stored: locks are keyed by a digest of it. */
export function keyDigest(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 32);
}

export interface SyncLockOptions {
  /** A heartbeat older than this frees the lock (default 60 s). */
  staleAfterMs: number;
  /** How often the heartbeat is written (default 10 s). */
  heartbeatMs: number;
}

/** Tries of the lock row's delete, and the pause before the next one (times the attempt). */
const RELEASE_ATTEMPTS = 3;
const RELEASE_RETRY_MS = 100;

export class SyncLock {
  /** Unique to this lock object: the row naming it is the fencing token every write checks. */
  readonly owner = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 10)}`;
  private timer: NodeJS.Timeout | undefined;
  /** Set when another process took the lock over (our heartbeat went stale). */
  lost = false;

  constructor(
    private readonly db: Kysely<MirrorDatabase>,
    private readonly keyHash: string,
    readonly team: string,
    private readonly options: SyncLockOptions = { staleAfterMs: 60_000, heartbeatMs: 10_000 },
  ) {}

  /** Takes the lock or throws `SyncLockError` naming the process that holds it. */
  async acquire(): Promise<void> {
    const now = new Date();
    await this.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('mirror_locks')
        .selectAll()
        .where('key_hash', '=', this.keyHash)
        .where('team', '=', this.team)
        .executeTakeFirst();
      if (row && row.owner !== this.owner && !this.isFree(row.owner, row.heartbeat_at, now)) {
        throw new SyncLockError(this.team, row.owner, row.heartbeat_at);
      }
      const values = { owner: this.owner, heartbeat_at: now.toISOString() };
      if (row) {
        // Only replace the row we read: a concurrent taker, or the holder committing a page (which renews
        // the heartbeat), makes this update match nothing.
        const res = await trx
          .updateTable('mirror_locks')
          .set(values)
          .where('key_hash', '=', this.keyHash)
          .where('team', '=', this.team)
          .where('owner', '=', row.owner)
          .where('heartbeat_at', '=', row.heartbeat_at)
          .executeTakeFirst();
        if (Number(res.numUpdatedRows) !== 1)
          throw new SyncLockError(this.team, 'a concurrent process', values.heartbeat_at);
      } else {
        await trx
          .insertInto('mirror_locks')
          .values({ key_hash: this.keyHash, team: this.team, ...values })
          .execute();
      }
    });
    this.timer = setInterval(() => void this.beat(), this.options.heartbeatMs);
    this.timer.unref();
  }

  /**
   * Inside the transaction of a write: renews the heartbeat if the row still names this owner, else throws
   * `SyncLockLostError` and the caller's transaction rolls back. It is the transaction's first write, so
   * it holds the lock row (PostgreSQL) or the database (SQLite) until the commit: a takeover either
   * happened before and refuses the write, or waits for the commit and then finds a fresh heartbeat.
   */
  async holdIn(trx: Transaction<MirrorDatabase>): Promise<void> {
    const res = await trx
      .updateTable('mirror_locks')
      .set({ heartbeat_at: new Date().toISOString() })
      .where('key_hash', '=', this.keyHash)
      .where('team', '=', this.team)
      .where('owner', '=', this.owner)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1) return;
    this.lost = true;
    throw new SyncLockLostError(this.team);
  }

  private isFree(owner: string, heartbeatAt: string, now: Date): boolean {
    if (now.getTime() - Date.parse(heartbeatAt) > this.options.staleAfterMs) return true;
    const [host, pid] = owner.split(':');
    if (host !== hostname() || !pid) return false;
    try {
      process.kill(Number(pid), 0);
      return false;
    } catch (err) {
      // ESRCH: the owner process is gone (crashed or killed); EPERM: it exists under another user.
      return (err as NodeJS.ErrnoException).code === 'ESRCH';
    }
  }

  private async beat(): Promise<void> {
    try {
      const res = await this.db
        .updateTable('mirror_locks')
        .set({ heartbeat_at: new Date().toISOString() })
        .where('key_hash', '=', this.keyHash)
        .where('team', '=', this.team)
        .where('owner', '=', this.owner)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 0) this.lost = true;
    } catch {
      // A failed heartbeat is retried on the next tick; staleness protects the other side.
    }
  }

  /**
   * Deletes the lock row. A run often ends here because the mirror's connection was lost, and the pool may
   * still hold connections lost in the same fault: the delete is tried again on a fresh connection (pg-pool
   * drops a broken one), since a row left behind would refuse this process's next run until it goes stale.
   */
  async release(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.db
          .deleteFrom('mirror_locks')
          .where('key_hash', '=', this.keyHash)
          .where('team', '=', this.team)
          .where('owner', '=', this.owner)
          .execute();
        return;
      } catch (err) {
        if (attempt >= RELEASE_ATTEMPTS) throw err;
        await new Promise((resolve) => setTimeout(resolve, RELEASE_RETRY_MS * attempt));
      }
    }
  }
}
