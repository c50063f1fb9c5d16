import type { Redis } from 'ioredis';
import { LockTable } from './lock-table.js';

// Every lock on Redis, mirrored in this process (docs/limits.md, "Leases"), so a charge served from a lease
// checks the locks without a round trip. Locks are not leased: each lock is set on Redis together with a notice
// on one channel (the lock script, redis-scripts.ts), and every process's mirror applies the notice as Redis
// delivers it, which is when Redis answers the process that set the lock. The mirror is trusted only while it
// is live: subscribed, and loaded with the locks that existed when the subscription began. Until then, and
// whenever the subscription drops, every charge checks the locks on Redis as before.

export class LockMirror {
  private readonly table = new LockTable();
  private sub: Redis | undefined;
  private state: 'off' | 'loading' | 'live' = 'off';
  /** Counts the subscription's connections, so a load that outlived its connection is not trusted. */
  private connection = 0;
  private lastLoad = Number.NEGATIVE_INFINITY;
  private closed = false;

  constructor(
    private readonly redis: Redis,
    /** The channel of the notices. */
    private readonly channel: string,
    /** The pattern of every lock's key. */
    private readonly pattern: string,
    /** Called with every notice as it is applied (the key on Redis, its end, its ttl). */
    private readonly onNotice: (key: string, untilMs: number, ttlMs: number) => void = () => undefined,
  ) {}

  /** True while the mirror holds every lock Redis holds (up to notices still on their way). */
  get live(): boolean {
    return this.state === 'live';
  }

  /** The clock time a lock (by its key on Redis) ends, as the mirror knows it. */
  lockedUntil(key: string): number | null {
    return this.table.lockedUntil(key);
  }

  /** Starts the subscription (once), or loads again after a failed load (at most once a second). */
  ensure(): void {
    if (this.closed || this.state !== 'off') return;
    if (!this.sub) {
      // A connection of its own: a subscribed connection takes no other command. No command timeout arms on a
      // connection that only listens.
      const sub = this.redis.duplicate({ autoResubscribe: false, enableOfflineQueue: true, lazyConnect: false });
      this.sub = sub;
      sub.on('error', () => undefined);
      sub.on('close', () => {
        this.connection += 1;
        this.state = 'off';
      });
      sub.on('ready', () => this.load());
      sub.on('message', (_channel: string, message: string) => this.apply(message));
      return;
    }
    if (this.sub.status === 'ready' && performance.now() - this.lastLoad >= 1000) this.load();
  }

  /** Stops listening (before the client is closed). */
  close(): void {
    this.closed = true;
    this.state = 'off';
    this.sub?.disconnect();
  }

  private apply(message: string): void {
    const [key, until, ttl] = message.split(' ');
    const untilMs = Number(until);
    const ttlMs = Number(ttl);
    if (key && Number.isFinite(untilMs) && Number.isFinite(ttlMs)) {
      this.table.lock(key, untilMs, ttlMs);
      this.onNotice(key, untilMs, ttlMs);
    }
  }

  /** Subscribes, then reads every lock that exists; live once both are done on the same connection. */
  private load(): void {
    const sub = this.sub;
    if (!sub || this.closed || this.state === 'loading') return;
    this.state = 'loading';
    this.lastLoad = performance.now();
    const connection = this.connection;
    void (async () => {
      await sub.subscribe(this.channel);
      let cursor = '0';
      do {
        const [next, keys] = await this.redis.scan(cursor, 'MATCH', this.pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) {
          const pipeline = this.redis.pipeline();
          for (const key of keys) pipeline.get(key).pttl(key);
          const replies = (await pipeline.exec()) ?? [];
          keys.forEach((key, i) => {
            const until = replies[2 * i]?.[1];
            const ttl = Number(replies[2 * i + 1]?.[1]);
            if (typeof until === 'string' && ttl > 0) {
              this.table.lock(key, Number(until), ttl);
              this.onNotice(key, Number(until), ttl);
            }
          });
        }
      } while (cursor !== '0');
    })().then(
      () => {
        if (this.state === 'loading' && connection === this.connection && !this.closed) this.state = 'live';
      },
      () => {
        if (this.state === 'loading') this.state = 'off';
      },
    );
  }
}
