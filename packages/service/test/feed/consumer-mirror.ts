import { ApiError } from '../../src/errors/catalogue.js';
import { FEED_KINDS } from '../../src/schemas/enums.js';
import type { Store } from '../../src/store/store.js';
import type { FeedPageJson } from './feed-world.js';

// A consumer that follows the spec's "Consumer behaviour the contract expects", rules 1 to 4, for one
// team: rows with versions, tombstones, the cursor saved only after a whole page, and a full resync
// by mark and sweep on 409 resync_required / 410 sync_cursor_expired.

type Item = FeedPageJson['data'][number];
type Row = { version: number | null; json: string; lead: string | null };
export type ReadPage = (cursor: string | undefined, limit: number) => Promise<FeedPageJson>;

const FACETS = ['lead_attribution', 'lead_response'];

export class ConsumerMirror {
  /** kind:id -> the record held; `version` is null after a resync forgot it. */
  readonly rows = new Map<string, Row>();
  private readonly tombstones = new Map<string, number>();
  private readonly removedLeads = new Set<string>();
  cursor: string | undefined;
  /** Records delivered since a full resync began; null while none runs. */
  private marks: Set<string> | null = null;
  resyncs = 0;

  constructor(private readonly readPage: ReadPage) {}

  private apply(item: Item): void {
    const key = `${item.kind}:${item.id}`;
    this.marks?.add(key);
    const objectLead = (item.object?.lead as string | null | undefined) ?? null;
    // Rule 2: after a lead's removal, later facets and activities of it are ignored.
    if (FACETS.includes(item.kind) && this.removedLeads.has(item.id)) return;
    if (item.kind === 'activity' && objectLead !== null && this.removedLeads.has(objectLead)) return;
    const held = Math.max(this.rows.get(key)?.version ?? 0, this.tombstones.get(key) ?? 0);
    if (held >= item.version) return;
    if (item.object) {
      this.rows.set(key, { version: item.version, json: JSON.stringify(item.object), lead: objectLead });
      this.tombstones.delete(key);
      return;
    }
    this.rows.delete(key);
    this.tombstones.set(key, item.version);
    if (item.kind === 'lead') {
      this.removedLeads.add(item.id);
      for (const kind of FACETS) this.rows.delete(`${kind}:${item.id}`);
      for (const [k, row] of this.rows) if (k.startsWith('activity:') && row.lead === item.id) this.rows.delete(k);
    }
  }

  /** Rule 4: forget versions and cursor, keep the records, mark what the next full read delivers. */
  private startResync(): void {
    this.resyncs++;
    this.cursor = undefined;
    this.tombstones.clear();
    this.removedLeads.clear();
    for (const row of this.rows.values()) row.version = null;
    this.marks = new Set();
  }

  /**
   * Reads one page and stores it; with `retry` the page is stored, the cursor not saved (a crash),
   * and the same cursor asked again. Returns has_more.
   */
  async step(limit: number, retry = false): Promise<boolean> {
    let page: FeedPageJson;
    try {
      page = await this.readPage(this.cursor, limit);
      if (retry) {
        for (const item of page.data) this.apply(item);
        page = await this.readPage(this.cursor, limit);
      }
    } catch (error) {
      if (error instanceof ApiError && (error.code === 'resync_required' || error.code === 'sync_cursor_expired')) {
        this.startResync();
        return true;
      }
      throw error;
    }
    for (const item of page.data) this.apply(item);
    this.cursor = page.next_cursor; // rule 3: only after the whole page is stored
    if (!page.has_more && this.marks) {
      for (const key of [...this.rows.keys()]) if (!this.marks.has(key)) this.rows.delete(key);
      this.marks = null;
    }
    return page.has_more;
  }

  /** Reads until caught up (bounded, so a bug cannot loop forever). */
  async catchUp(limit: number): Promise<void> {
    for (let i = 0; i < 100_000; i++) if (!(await this.step(limit))) return;
    throw new Error('the feed never caught up');
  }

  /** kind:id -> JSON of what the mirror holds. */
  snapshot(): Map<string, string> {
    return new Map([...this.rows].map(([k, r]) => [k, r.json]));
  }
}

/** kind:id -> JSON of every live record of the team's feed kinds, as the service holds them now. */
export async function serviceData(store: Store, team: string): Promise<Map<string, string>> {
  const data = new Map<string, string>();
  for (const kind of FEED_KINDS) {
    let after = 0;
    for (;;) {
      const rows = await store.listRecords({ team, kind, after, limit: 500 });
      for (const r of rows) data.set(`${kind}:${(JSON.parse(r.json) as { id: string }).id}`, r.json);
      const last = rows[rows.length - 1];
      if (!last || rows.length < 500) break;
      after = last.seq;
    }
  }
  return data;
}
