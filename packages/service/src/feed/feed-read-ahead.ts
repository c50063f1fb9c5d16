import type { Clock } from '../clock.js';
import type { FeedPageQuery, JsonFeedPage, Store } from '../store/store.js';

// The next page of a feed walk, read while the consumer is still parsing the page it just got
// (docs/feed.md, "Read-ahead"). A consumer asks for a page only once it holds the one before (the cursor
// is in it), so without this the database read and the consumer's work never overlap.
//
// Why a page read ahead is exact: it is used only if the team's feed head it saw (the statement reads
// the head in the page's own snapshot) is the head the request read after it arrived. Every change to
// what a feed page shows appends to the team's feed in the same transaction (as for the page cache,
// http/page-cache.ts) and heads only grow, so equal heads mean either nothing was committed between the
// page's snapshot and the request's read, or the snapshot was taken after that read, while the request
// was already waiting. And it is used only if it was a full page: all `limit + 1` entries it looked at
// were ready at its cutoff, so at any later cutoff the same statement cuts nothing either. Anything else is
// read again, as without read-ahead.
//
// A read-ahead nobody asks for is wasted work: when the next page goes to another process (several
// processes without sticky connections) or the consumer stops. The process counts what its read-aheads
// came to and stops reading ahead while most were wasted, trying one in PROBE_EVERY to notice a change.

/** What became of read-ahead pages (the metrics read these). */
export interface ReadAheadStats {
  /** Answered a request. */
  used: number;
  /** Read again: the feed moved on, or the page was not full when read. */
  stale: number;
  /** Never asked for: dropped for room or age. */
  unused: number;
  /** Read-aheads started. */
  started: number;
}

interface Ahead {
  /** When it was started (clock ms), for the age limit. */
  at: number;
  cutoff: number;
  page: Promise<JsonFeedPage | undefined>;
}

/** Pages held at most (a page is at most `limit` stored bodies). */
export const DEFAULT_READ_AHEAD_PAGES = 32;
/** A read-ahead not asked for within this is dropped: consumers ask for the next page within milliseconds. */
const MAX_AGE_MS = 30_000;
/** Wasted read-aheads tolerated beyond the used ones before reading ahead stops. */
const WASTE_SLACK = 8;
/** While stopped, one full page in this many still reads ahead, so a return of sticky consumers is seen. */
const PROBE_EVERY = 16;

export class FeedReadAhead {
  private readonly pending = new Map<string, Ahead>();
  readonly stats: ReadAheadStats = { used: 0, stale: 0, unused: 0, started: 0 };
  /** Recent outcomes, halved now and then so that old ones fade. */
  private recent = { used: 0, wasted: 0 };
  private skipped = 0;

  constructor(
    private readonly store: Pick<Store, 'feedPage'>,
    private readonly clock: Clock,
    private readonly capacity: number = DEFAULT_READ_AHEAD_PAGES,
  ) {}

  get enabled(): boolean {
    return this.capacity > 0;
  }

  /**
   * The page `query` asks for: the one read ahead for it when that still holds, else read now. `head` is
   * the team's feed head as the request read it once it had arrived (none: nothing read ahead is used).
   */
  async page(query: FeedPageQuery, head: number | undefined): Promise<JsonFeedPage> {
    const key = keyOf(query);
    const ahead = this.pending.get(key);
    if (ahead) {
      this.pending.delete(key);
      const page = await ahead.page;
      if (page?.hasMore && page.head === head && query.cutoff >= ahead.cutoff) {
        this.count('used');
        return page;
      }
      this.count('stale');
    }
    return this.store.feedPage(query);
  }

  /**
   * After answering a full page: reads the page after `query.after` once the answer is on its way (the
   * next turn of the event loop), its cutoff `holdBackMs` before the clock at that moment.
   */
  readNext(query: Omit<FeedPageQuery, 'cutoff'>, holdBackMs: number): void {
    if (!this.enabled || !this.worthIt()) return;
    const key = keyOf(query);
    if (this.pending.has(key)) return;
    this.dropOld();
    const ahead: Ahead = { at: this.clock.now(), cutoff: 0, page: Promise.resolve(undefined) };
    ahead.page = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      ahead.cutoff = this.clock.now() - holdBackMs;
      return this.store.feedPage({ ...query, cutoff: ahead.cutoff });
    });
    // A failed read-ahead is no answer's concern: the request that would have used it reads the page itself.
    ahead.page = ahead.page.catch(() => undefined);
    this.pending.set(key, ahead);
    this.stats.started++;
  }

  /** Settles once every read-ahead started so far has finished reading (tests). */
  async idle(): Promise<void> {
    await Promise.all([...this.pending.values()].map((ahead) => ahead.page));
  }

  /** Drops read-aheads past their age, and the oldest when full. */
  private dropOld(): void {
    const now = this.clock.now();
    for (const [key, ahead] of this.pending) {
      if (this.pending.size < this.capacity && now - ahead.at <= MAX_AGE_MS) break;
      this.pending.delete(key);
      this.count('unused');
    }
  }

  private get wasteful(): boolean {
    return this.recent.wasted > this.recent.used + WASTE_SLACK;
  }

  private worthIt(): boolean {
    if (!this.wasteful) return true;
    this.skipped = (this.skipped + 1) % PROBE_EVERY;
    return this.skipped === 0;
  }

  private count(outcome: 'used' | 'stale' | 'unused'): void {
    this.stats[outcome]++;
    // A probe that was used: consumers come back to this process again, so read ahead for them at once.
    if (outcome === 'used' && this.wasteful) this.recent = { used: 0, wasted: 0 };
    if (outcome === 'used') this.recent.used++;
    else this.recent.wasted++;
    if (this.recent.used + this.recent.wasted >= 64) {
      this.recent = { used: this.recent.used / 2, wasted: this.recent.wasted / 2 };
    }
  }
}

function keyOf(query: Omit<FeedPageQuery, 'cutoff'>): string {
  return `${query.team}\u0000${query.after}\u0000${query.limit}`;
}
